#[status_core::dependency(urgency = "critical")]
async fn primary_db() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
