fn main() {
    let cache = status_core::group! {
        name = "cache",
        tags = ["cache", "sessions"],
        dependencies = ["session-store"],
        fails_on = MINOR,
        rotation = false,
        startup = true,
    };
    assert_eq!(cache.name().as_str(), "cache");
    assert_eq!(cache.tags(), ["cache", "sessions"]);
    assert_eq!(cache.ids()[0].as_str(), "session-store");
    assert_eq!(cache.fails_on(), status_core::CheckStatus::Minor);
    assert!(!cache.rotation() && cache.startup());
    let defaults = status_core::group! { name = "ready", dependencies = ["db"] };
    assert_eq!(defaults.fails_on(), status_core::CheckStatus::Outage);
    assert!(defaults.rotation() && defaults.startup());
}
