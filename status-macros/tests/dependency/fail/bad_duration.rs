#[status_core::dependency(timeout = "2 seconds")]
async fn slow_unit() -> Result<(), std::io::Error> {
    Ok(())
}

#[status_core::dependency(period = "0s")]
async fn zero() -> Result<(), std::io::Error> {
    Ok(())
}

#[status_core::dependency(period = "ms")]
async fn no_number() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
