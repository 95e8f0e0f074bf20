//! What keeps an unauthenticated door safe: addresses a webhook may not reach, a bound on
//! how fast subscriptions come in, the syntax of an address. Pure: told the time.

use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Whether a webhook may be sent to `ip`: not to loopback, private, link-local (the cloud
/// metadata service at 169.254.169.254 included), unspecified, multicast, shared or
/// documentation ranges, nor their IPv4-mapped IPv6 forms.
pub(crate) fn reachable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                // Shared address space (carrier-grade NAT), 100.64.0.0/10.
                || (a == 100 && (64..128).contains(&b))
                // Benchmarking, 198.18.0.0/15.
                || (a == 198 && (b == 18 || b == 19)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return reachable(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // Unique local fc00::/7, link-local fe80::/10.
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// A mail address as kept (lowercase), if it looks like one: `local@domain.tld`, at most
/// 254 characters, no spaces or control characters, one `@`.
pub(crate) fn mail_address(text: &str) -> Option<String> {
    let text = text.trim();
    if text.len() > 254 || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (local, domain) = text.split_once('@')?;
    let ok = !local.is_empty()
        && local.len() <= 64
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    ok.then(|| text.to_ascii_lowercase())
}

/// How many subscriptions may come in: a bucket of `burst`, refilled at `per_minute`. One
/// for the whole door, whoever knocks: what it bounds is mail sent and rows kept.
#[derive(Debug)]
pub(crate) struct Bucket {
    burst: f64,
    per_second: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    pub(crate) fn new(burst: u32, per_minute: u32, now: Instant) -> Self {
        Self {
            burst: f64::from(burst.max(1)),
            per_second: f64::from(per_minute.max(1)) / 60.0,
            tokens: f64::from(burst.max(1)),
            at: now,
        }
    }

    /// Takes one at `now`; when there is none, how long until there is.
    pub(crate) fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64(
                ((1.0 - self.tokens) / self.per_second).ceil().max(1.0),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_not_reachable() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(!reachable(bad.parse().unwrap()), "{bad}");
        }
        for good in ["93.184.216.34", "2606:2800:220:1::1", "1.1.1.1"] {
            assert!(reachable(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn mail_addresses_are_checked_and_lowercased() {
        assert_eq!(
            mail_address(" Ana@Example.COM ").as_deref(),
            Some("ana@example.com")
        );
        for bad in [
            "ana",
            "ana@",
            "@example.com",
            "ana@example",
            "a b@example.com",
            "ana@ex@ample.com",
            "ana@.example.com",
            "ana@example.com\r\nBcc: x@y.z",
        ] {
            assert!(mail_address(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn the_bucket_bounds_a_burst_and_refills() {
        let t0 = Instant::now();
        let mut b = Bucket::new(3, 60, t0);
        for _ in 0..3 {
            assert!(b.take(t0).is_ok());
        }
        let wait = b.take(t0).unwrap_err();
        assert_eq!(wait, Duration::from_secs(1));
        assert!(b.take(t0 + Duration::from_secs(1)).is_ok());
        assert!(b.take(t0 + Duration::from_secs(1)).is_err());
        assert!(b.take(t0 + Duration::from_secs(600)).is_ok(), "refilled");
    }
}
