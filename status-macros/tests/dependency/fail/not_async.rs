#[status_core::dependency]
fn primary_db() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
