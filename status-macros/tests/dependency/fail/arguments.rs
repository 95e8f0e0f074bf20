#[status_core::dependency(id = "db", unknown = "x")]
async fn unknown_argument() -> Result<(), std::io::Error> {
    Ok(())
}

#[status_core::dependency]
async fn destructures((host, port): (String, u16)) -> Result<(), std::io::Error> {
    let _ = (host, port);
    Ok(())
}

#[status_core::dependency(id = "db", depends_on = ["db"])]
async fn depends_on_itself() -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {}
