#[status_core::dependency]
async fn returns_a_string() -> String {
    String::new()
}

#[status_core::dependency]
async fn returns_nothing() {}

fn main() {}
