use status_core::{CheckStatus, Requirement};

fn main() {
    let checkout = status_core::feature! {
        name = "checkout",
        description = "Pay for the cart",
        requires = { "payments-api": MINOR, "primary-db": Major },
        requires_system = OUTAGE,
    };
    assert_eq!(checkout.name().as_str(), "checkout");
    assert_eq!(checkout.description(), "Pay for the cart");
    assert!(matches!(
        &checkout.requirements()[0],
        Requirement::Dependency { id, no_worse_than: CheckStatus::Minor } if id.as_str() == "payments-api"
    ));
    assert!(matches!(
        checkout.requirements()[2],
        Requirement::System { no_worse_than: CheckStatus::Outage }
    ));
    let bare = status_core::feature!(name = "bare");
    assert!(bare.requirements().is_empty());
}
