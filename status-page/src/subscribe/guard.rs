//! What keeps an unauthenticated door safe: addresses a webhook may not reach, a bound on
//! how fast subscriptions come in, the syntax of an address. Pure: told the time.

use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Whether a webhook may be sent to `ip`: only to a global unicast address. Not to
/// loopback, private, link-local (the cloud metadata service at 169.254.169.254 included),
/// unspecified, multicast, shared, documentation, benchmarking or reserved ranges (IANA's
/// special-purpose registries), nor through an IPv6 form that carries an IPv4 address
/// (mapped, compatible, NAT64, 6to4) to one of those; Teredo, ORCHID and the discard prefix
/// never.
pub(crate) fn reachable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
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
                || (a == 198 && (b == 18 || b == 19))
                // IETF protocol assignments 192.0.0.0/24, the 6to4 relay 192.88.99.0/24.
                || (a == 192 && b == 0 && c == 0)
                || (a == 192 && b == 88 && c == 99)
                // Reserved, 240.0.0.0/4.
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            let o = v6.octets();
            let embedded = |at: usize| {
                IpAddr::V4(std::net::Ipv4Addr::new(
                    o[at],
                    o[at + 1],
                    o[at + 2],
                    o[at + 3],
                ))
            };
            if let Some(v4) = v6.to_ipv4_mapped() {
                return reachable(IpAddr::V4(v4));
            }
            // IPv4-compatible ::/96 (deprecated; :: and ::1 are refused below).
            if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
                return false;
            }
            // NAT64 64:ff9b::/96: the IPv4 address it reaches decides.
            if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return reachable(embedded(12));
            }
            // 6to4 2002::/16: the IPv4 address it reaches decides.
            if s[0] == 0x2002 {
                return reachable(embedded(2));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // Unique local fc00::/7, link-local fe80::/10, site-local fec0::/10.
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                // Local-use NAT64 64:ff9b:1::/48, discard-only 100::/64.
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
                || (s[0] == 0x100 && s[1..4] == [0, 0, 0])
                // Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID 2001:10::/28 and
                // 2001:20::/28, documentation 2001:db8::/32 and 3fff::/20.
                || (s[0] == 0x2001 && s[1] == 0)
                || (s[0] == 0x2001 && s[1] == 2 && s[2] == 0)
                || (s[0] == 0x2001 && (s[1] & 0xfff0) == 0x10)
                || (s[0] == 0x2001 && (s[1] & 0xfff0) == 0x20)
                || (s[0] == 0x2001 && s[1] == 0xdb8)
                || (s[0] & 0xfff0) == 0x3ff0)
        }
    }
}

/// A mail address as kept (lowercase), if it looks like one: `local@domain.tld`, at most
/// 254 characters, no spaces or control characters, one `@`, and one the mailer can send
/// to. A quoted local part that needs no quotes is kept without them (`"ana"@example.com` is
/// `ana@example.com`: one mailbox, one subscriber, one cooldown), and a domain is kept as the
/// mail system resolves it, its A-label (`ana@bücher.example` is `ana@xn--bcher-kva.example`).
pub(crate) fn mail_address(text: &str) -> Option<String> {
    let text = text.trim();
    if text.len() > 254 || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    let (local, domain) = text.split_once('@')?;
    let ascii;
    let domain = if domain.is_ascii() {
        domain
    } else {
        ascii = idna::domain_to_ascii(domain).ok()?;
        ascii.as_str()
    };
    if domain.len() > 253 {
        return None;
    }
    let local = match local.strip_prefix('"').and_then(|l| l.strip_suffix('"')) {
        Some(inner) if !inner.is_empty() && inner.chars().all(atom) && !inner.contains("..") => {
            inner
        }
        Some(_) => return None,
        None => local,
    };
    let text = &format!("{local}@{domain}");
    text.parse::<lettre::Address>().ok()?;
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

/// Whether `c` may stand unquoted in a local part (RFC 5322's `atext`, and the dots).
fn atom(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c)
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

    /// The tokens it would hold at `now`.
    fn level(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        (self.tokens + elapsed * self.per_second).min(self.burst)
    }
}

/// The most addresses whose buckets are kept at once.
const MAX_ADDRESSES: usize = 4_096;

/// A bucket per client address, before the door's own: one client spends its own share, not
/// every visitor's. An IPv6 client is one /64 (what one host is usually given); at most
/// [`MAX_ADDRESSES`] are kept, the fullest (the longest idle) forgotten first.
#[derive(Debug)]
pub(crate) struct Buckets {
    burst: u32,
    per_minute: u32,
    by: std::collections::HashMap<IpAddr, Bucket>,
}

impl Buckets {
    pub(crate) fn new(burst: u32, per_minute: u32) -> Self {
        Self {
            burst,
            per_minute,
            by: std::collections::HashMap::new(),
        }
    }

    /// Takes one of `from`'s at `now`; when it has none, how long until it has.
    pub(crate) fn take(&mut self, from: IpAddr, now: Instant) -> Result<(), Duration> {
        let key = match from {
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
            IpAddr::V6(v6) => IpAddr::V4(
                v6.to_ipv4_mapped()
                    .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
            ),
            v4 => v4,
        };
        if !self.by.contains_key(&key) && self.by.len() >= MAX_ADDRESSES {
            // A full bucket is one never taken from: forgetting it loses nothing.
            let burst = f64::from(self.burst.max(1));
            self.by.retain(|_, b| b.level(now) < burst);
            if self.by.len() >= MAX_ADDRESSES {
                let fullest = self
                    .by
                    .iter()
                    .max_by(|a, b| a.1.level(now).total_cmp(&b.1.level(now)))
                    .map(|(k, _)| *k);
                if let Some(k) = fullest {
                    self.by.remove(&k);
                }
            }
        }
        let (burst, per_minute) = (self.burst, self.per_minute);
        self.by
            .entry(key)
            .or_insert_with(|| Bucket::new(burst, per_minute, now))
            .take(now)
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
            // Reached through the IPv6 forms that carry an IPv4 address.
            "::127.0.0.1",
            "::10.0.0.1",
            "::93.184.216.34",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
            "2002:a00:1::1",
            // Special-purpose ranges.
            "240.0.0.1",
            "255.255.255.255",
            "192.0.0.8",
            "192.88.99.1",
            "198.18.0.1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "2001:db8::1",
            "3fff::1",
            "fec0::1",
        ] {
            assert!(!reachable(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "93.184.216.34",
            "2606:2800:220:1::1",
            "1.1.1.1",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
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
            "\"a\\\"b\"@example.com",
            "\"\"@example.com",
        ] {
            assert!(mail_address(bad).is_none(), "{bad:?}");
        }
        // One mailbox, however it is quoted.
        assert_eq!(
            mail_address("\"Ana\"@Example.com").as_deref(),
            Some("ana@example.com")
        );
        assert_eq!(
            mail_address("\"ana.b\"@example.com").as_deref(),
            Some("ana.b@example.com")
        );
        // One mailbox, whichever way its domain is written.
        assert_eq!(
            mail_address("Ana@Bücher.example").as_deref(),
            Some("ana@xn--bcher-kva.example")
        );
        assert_eq!(
            mail_address("ana@xn--bcher-kva.example"),
            mail_address("ana@bücher.example")
        );
        assert!(mail_address("ana@bü cher.example").is_none());
        assert!(mail_address("ana@\u{fffe}.example").is_none());
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

    #[test]
    fn each_address_spends_its_own_share() {
        let t0 = Instant::now();
        let mut by = Buckets::new(2, 2);
        let (one, other): (IpAddr, IpAddr) = (
            "203.0.113.7".parse().unwrap(),
            "198.51.100.9".parse().unwrap(),
        );
        assert!(by.take(one, t0).is_ok());
        assert!(by.take(one, t0).is_ok());
        assert_eq!(by.take(one, t0).unwrap_err(), Duration::from_secs(30));
        assert!(by.take(other, t0).is_ok(), "another address has its own");
        // One host's IPv6 addresses are one /64; its IPv4-mapped form is its IPv4 address.
        let v6: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert!(by.take(v6, t0).is_ok() && by.take(same, t0).is_ok());
        assert!(by.take(v6, t0).is_err());
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().unwrap();
        assert!(by.take(mapped, t0).is_err(), "the same client");
        // Thousands of addresses cannot push out one that is spending.
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            let _ = by.take(IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i)), t0);
        }
        assert!(by.by.len() <= MAX_ADDRESSES);
        assert!(by.take(one, t0).is_err(), "still spent: not forgotten");
    }
}
