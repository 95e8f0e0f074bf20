fn main() {
    let _ = status_core::group! {
        name = "empty",
    };
    let _ = status_core::group! {
        name = "never",
        tags = ["x"],
        fails_on = OK,
    };
    let _ = status_core::group! {
        name = "twice",
        dependencies = ["db", "db"],
    };
    let _ = status_core::group! {
        name = "Bad Name",
        tags = ["x"],
    };
    let _ = status_core::group! {
        name = "x",
        tags = ["x"],
        rotation = "no",
    };
}
