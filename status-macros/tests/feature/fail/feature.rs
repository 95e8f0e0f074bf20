fn main() {
    let _ = status_core::feature! {
        name = "checkout",
        requires = { "payments-api": BROKEN },
    };
    let _ = status_core::feature! {
        name = "Check Out",
    };
    let _ = status_core::feature! {
        description = "no name",
    };
    let _ = status_core::feature! {
        name = "x",
        needs = { "a": OK },
    };
}
