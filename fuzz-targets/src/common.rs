//! What the targets share: one runtime, and the registry most of them ask: a passive `db`,
//! and `writes` requiring it no worse than MINOR.

use std::sync::OnceLock;

use status_core::{CheckStatus, Dependency, Feature, Registry};

/// One current-thread runtime for every input.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// A registry with the passive dependency `db`.
pub(crate) fn registry_with_db() -> Registry {
    let registry = Registry::new();
    registry
        .add_passive(Dependency::passive("db").build_info().expect("valid"))
        .expect("registered");
    registry
}

/// [`registry_with_db`] and the feature `writes`, requiring `db` no worse than MINOR.
pub(crate) fn registry_with_writes() -> Registry {
    let registry = registry_with_db();
    registry
        .add_feature(
            Feature::builder("writes")
                .requires("db", CheckStatus::Minor)
                .build()
                .expect("valid"),
        )
        .expect("added");
    registry
}
