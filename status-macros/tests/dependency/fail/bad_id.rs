#[status_core::dependency(id = "Primary DB")]
async fn primary_db() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
