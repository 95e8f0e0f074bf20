//! Why an address a check was given is not one, in words an operator can act on: what the URL
//! parser found (a port out of range, a missing host, a scheme not spoken), and the forms
//! expected. The address itself is never repeated: it may carry a password.

/// What is wrong with `address`, told the schemes a URL of it may use and the forms
/// expected (`forms`), or the client's own word `client` when the URL parser finds nothing.
pub(crate) fn why(address: &str, schemes: &[&str], forms: &str, client: &str) -> String {
    let found = if address.contains("://") {
        match url::Url::parse(address) {
            Err(e) => e.to_string(),
            Ok(url) if !schemes.contains(&url.scheme()) => {
                format!(
                    "the scheme {:?} is not one of {}",
                    url.scheme(),
                    schemes.join(", ")
                )
            }
            Ok(url) if url.host_str().is_none_or(str::is_empty) && url.scheme() != "unix" => {
                "no host".to_owned()
            }
            Ok(_) => client.to_owned(),
        }
    } else {
        client.to_owned()
    };
    format!("{found} (expected {forms})")
}

/// [`why`] for a Redis URL the client refused with `e`.
#[cfg(feature = "redis")]
pub(crate) fn redis(url: &str, e: &redis::RedisError) -> String {
    why(
        url,
        &["redis", "rediss", "redis+unix", "unix"],
        "redis://[:password@]host:port[/db], rediss:// for TLS, or redis+unix:///path",
        &e.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_is_wrong_and_never_the_password() {
        let schemes = ["redis", "rediss"];
        let forms = "redis://[:password@]host:port[/db]";
        let said = |a: &str| why(a, &schemes, forms, "did not parse");
        assert!(said("redis://:hunter2@h:99999").starts_with("invalid port number"));
        assert!(!said("redis://:hunter2@h:99999").contains("hunter2"));
        assert!(
            said("http://h:6379").starts_with("the scheme \"http\" is not one of redis, rediss")
        );
        assert!(said("notaurl").starts_with("did not parse (expected redis://"));
    }
}
