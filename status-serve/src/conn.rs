//! What the server knows of each connection: whether a request is in progress, whether one
//! ever came, since when it has been in its phase; and the table of open connections the
//! cap sheds from.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Waiting for the first byte of a request (a new or kept-alive connection).
const IDLE: u8 = 0;
/// Some bytes of a request's head arrived, not all.
const HEAD: u8 = 1;
/// A request (an HTTP/2 stream) is being answered.
const BUSY: u8 = 2;

/// How long a connection may wait in each phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From its opening to its first request (gRPC's handshake timeout; HTTP/1 takes its idle
    /// timeout).
    pub first: Duration,
    /// From the first byte of a request's head to the whole head (HTTP/1's header timeout);
    /// `None` where a protocol reads heads itself (HTTP/2).
    pub head: Option<Duration>,
    /// From the end of its last request, with none in progress.
    pub idle: Duration,
}

/// One open connection, as its protocol tells the server of it.
#[derive(Debug)]
pub struct Conn {
    id: u64,
    epoch: Instant,
    phase: AtomicU8,
    /// Milliseconds from the table's epoch to the start of the current phase.
    since: AtomicU64,
    /// Requests in progress (HTTP/1: 0 or 1; HTTP/2: its open streams).
    in_flight: AtomicU64,
    /// Whether a request ever began.
    spoke: AtomicBool,
    /// Told to close at once.
    shed: Notify,
}

/// A request in progress on its connection, until dropped (when its answer is written
/// whole, or given up on: see [`Tracked`](crate::Tracked)).
#[derive(Debug)]
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        let conn = &self.0;
        if conn.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            conn.enter(IDLE);
        }
    }
}

impl Conn {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn enter(&self, phase: u8) {
        self.since.store(self.now(), Ordering::Release);
        self.phase.store(phase, Ordering::Release);
    }

    fn since(&self) -> Instant {
        self.epoch + Duration::from_millis(self.since.load(Ordering::Acquire))
    }

    /// A request begins (its head is whole and handed to the service): the connection is
    /// busy until the guard is dropped, never timed out, and shed only when the cap leaves
    /// no idle connection to shed (see the [crate docs](crate)).
    #[must_use = "the request ends when the guard is dropped"]
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.spoke.store(true, Ordering::Release);
        if self.in_flight.fetch_add(1, Ordering::AcqRel) == 0 {
            // Busy since now: how long it has held its place without finishing.
            self.since.store(self.now(), Ordering::Release);
        }
        self.phase.store(BUSY, Ordering::Release);
        Busy(Arc::clone(self))
    }

    /// Bytes arrived: the first ones of a request's head start its head timeout.
    pub fn bytes_arrived(&self) {
        if self.phase.load(Ordering::Relaxed) == IDLE
            && self
                .phase
                .compare_exchange(IDLE, HEAD, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.since.store(self.now(), Ordering::Release);
        }
    }

    /// Whether a request is in progress.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        self.phase.load(Ordering::Acquire) == BUSY
    }

    /// Whether a request ever began on it.
    #[must_use]
    pub fn spoke(&self) -> bool {
        self.spoke.load(Ordering::Acquire)
    }

    /// When it is past due: `first` after its opening while it never spoke, `head` after the
    /// first byte of a head, `idle` after its last answer; `None` while busy.
    #[must_use]
    pub fn deadline(&self, t: Timeouts) -> Option<Instant> {
        match self.phase.load(Ordering::Acquire) {
            BUSY => None,
            HEAD => Some(self.since() + t.head.unwrap_or(t.idle)),
            _ if !self.spoke() => Some(self.since() + t.first),
            _ => Some(self.since() + t.idle),
        }
    }

    /// When to look at it again: its deadline, and no later than `head` (else `first`) from
    /// now, since a head may start, or a request end, without waking anyone. So a slow head
    /// is closed between one and two head timeouts after its first byte.
    #[must_use]
    pub fn next_look(&self, t: Timeouts) -> Instant {
        let soon = Instant::now() + t.head.unwrap_or(t.first);
        self.deadline(t).map_or(soon, |deadline| deadline.min(soon))
    }

    /// Resolves when the server sheds it to make room: close it at once.
    pub async fn shed(&self) {
        self.shed.notified().await;
    }

    /// What shedding it costs, least first: an idle connection before a busy one, and
    /// among either the one longest in its phase (a connection holding a request it never
    /// finishes, a slow body, has done the least for its place).
    fn cost(&self) -> (bool, u64) {
        (self.is_busy(), self.since.load(Ordering::Acquire))
    }
}

/// Which connection went to make room for a new one, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shed {
    /// None: there was room.
    None,
    /// One waiting for a request.
    Idle,
    /// One in the middle of a request.
    Busy,
}

/// The open connections.
#[derive(Debug)]
pub(crate) struct Table {
    epoch: Instant,
    next: AtomicU64,
    open: Mutex<Open>,
}

/// The connections open, and how many each client holds.
#[derive(Debug, Default)]
struct Open {
    by_id: HashMap<u64, (Arc<Conn>, IpAddr)>,
    per_client: HashMap<IpAddr, usize>,
}

/// The client a connection from `ip` counts against: an IPv4 address (IPv4-mapped IPv6 as
/// IPv4), or an IPv6 /64 (what one host is usually given).
fn client(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

impl Table {
    pub(crate) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(Open::default()),
        }
    }

    /// A new connection from `remote`, idle, not yet spoken, and which of its client's own
    /// was shed for it: a client holding `per_client` makes room by its own cheapest
    /// connection ([`Conn::cost`]: its longest idle, else the one longest in a request). One
    /// client then cannot take every place, busy or idle, and its own flood never keeps its
    /// newest connection (its probe) out.
    pub(crate) fn open(&self, remote: IpAddr, per_client: usize) -> (Arc<Conn>, Shed) {
        let client = client(remote);
        let mut open = self.lock();
        let held = open.per_client.get(&client).copied().unwrap_or(0);
        let shed = if held >= per_client {
            Self::shed_cheapest(&mut open, |c| *c == client)
        } else {
            Shed::None
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            epoch: self.epoch,
            phase: AtomicU8::new(IDLE),
            since: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            spoke: AtomicBool::new(false),
            shed: Notify::new(),
        });
        conn.enter(IDLE);
        open.by_id.insert(id, (Arc::clone(&conn), client));
        *open.per_client.entry(client).or_default() += 1;
        (conn, shed)
    }

    pub(crate) fn close(&self, conn: &Conn) {
        let mut open = self.lock();
        Self::forget(&mut open, conn.id);
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Makes room at the cap: the connection that has waited longest without a request in
    /// progress goes; with every one busy, the cheapest of the client holding the most
    /// places, when it holds more than one. [`Shed::None`] when every connection is busy and
    /// each client holds one: the new one waits in the backlog then.
    pub(crate) fn shed_one(&self) -> Shed {
        let mut open = self.lock();
        let any_idle = open.by_id.values().any(|(c, _)| !c.is_busy());
        if any_idle {
            return Self::shed_cheapest(&mut open, |_| true);
        }
        let heaviest = open
            .per_client
            .iter()
            .filter(|(_, held)| **held > 1)
            .max_by_key(|(_, held)| **held)
            .map(|(client, _)| *client);
        match heaviest {
            Some(client) => Self::shed_cheapest(&mut open, |c| *c == client),
            None => Shed::None,
        }
    }

    /// Sheds the cheapest connection of the clients `of` picks.
    fn shed_cheapest(open: &mut Open, of: impl Fn(&IpAddr) -> bool) -> Shed {
        let cheapest = open
            .by_id
            .values()
            .filter(|(_, c)| of(c))
            .map(|(conn, _)| (conn.cost(), conn.id))
            .min();
        let Some(((busy, _), id)) = cheapest else {
            return Shed::None;
        };
        if let Some(conn) = Self::forget(open, id) {
            conn.shed.notify_one();
        }
        if busy {
            Shed::Busy
        } else {
            Shed::Idle
        }
    }

    fn forget(open: &mut Open, id: u64) -> Option<Arc<Conn>> {
        let (conn, client) = open.by_id.remove(&id)?;
        if let Some(held) = open.per_client.get_mut(&client) {
            *held -= 1;
            if *held == 0 {
                open.per_client.remove(&client);
            }
        }
        Some(conn)
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        crate::sync::lock(&self.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const LOCAL: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn held(table: &Table, conn: &Conn) -> bool {
        table.lock().by_id.contains_key(&conn.id)
    }

    #[tokio::test(start_paused = true)]
    async fn one_client_holds_at_most_its_share_of_the_places() {
        let table = Table::new();
        let one: IpAddr = "203.0.113.7".parse().unwrap();
        let mut mine = Vec::new();
        for _ in 0..3 {
            mine.push(table.open(one, 3).0);
            tokio::time::advance(S).await;
        }
        // Its share taken, idle: its own oldest makes room.
        let (fourth, shed) = table.open(one, 3);
        assert_eq!(shed, Shed::Idle);
        assert!(!held(&table, &mine[0]), "its own oldest idle went");
        // Its share taken, every one answering: the one longest in a request goes.
        tokio::time::advance(S).await;
        let _fourth = fourth.begin();
        tokio::time::advance(S).await;
        let _second = mine[2].begin();
        let _first = mine[1].begin();
        let (fifth, shed) = table.open(one, 3);
        assert_eq!(shed, Shed::Busy);
        assert!(!held(&table, &fourth), "the one longest in a request went");
        assert!(held(&table, &mine[1]) && held(&table, &mine[2]));
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().unwrap();
        let (_, shed) = table.open(mapped, 3);
        assert_eq!(shed, Shed::Idle, "the same client: its newest, idle, went");
        assert!(!held(&table, &fifth));
        let (_other, shed) = table.open(LOCAL, 3);
        assert_eq!(shed, Shed::None, "another client has its own places");
        // One host's IPv6 addresses are one client: a /64.
        let v6: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let (first, _) = table.open(v6, 1);
        let _answering = first.begin();
        assert_eq!(table.open(same, 1).1, Shed::Busy);
        // A connection closed gives its place back.
        table.close(&mine[1]);
        assert_eq!(table.open(one, 3).1, Shed::None);
    }

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_longest_idle_goes_then_the_heaviest_clients_longest_request() {
        let table = Table::new();
        let flood: IpAddr = "203.0.113.7".parse().unwrap();
        let first = table.open(LOCAL, usize::MAX).0;
        tokio::time::advance(S).await;
        let second = table.open(flood, usize::MAX).0;
        tokio::time::advance(S).await;
        let third = table.open(flood, usize::MAX).0;
        let busy = first.begin();
        assert_eq!(table.shed_one(), Shed::Idle);
        assert!(held(&table, &first), "busy: kept while one is idle");
        assert!(!held(&table, &second), "the oldest idle goes");
        assert!(held(&table, &third));
        // Each client holds one, every one answering: nothing goes, the new one waits.
        let third_busy = third.begin();
        assert_eq!(table.shed_one(), Shed::None);
        // The flood holds two: its longest in a request goes, never the lone client's.
        tokio::time::advance(S).await;
        let fourth = table.open(flood, usize::MAX).0;
        let _fourth = fourth.begin();
        assert_eq!(table.shed_one(), Shed::Busy);
        assert!(!held(&table, &third) && held(&table, &fourth) && held(&table, &first));
        drop((busy, third_busy));
        assert_eq!(
            table.shed_one(),
            Shed::Idle,
            "done answering, it goes first"
        );
        assert!(!held(&table, &first));
    }

    #[tokio::test(start_paused = true)]
    async fn http1_a_head_has_its_deadline_from_its_first_byte() {
        let t = Timeouts {
            first: 60 * S,
            head: Some(5 * S),
            idle: 60 * S,
        };
        let table = Table::new();
        let conn = table.open(LOCAL, usize::MAX).0;
        let opened = Instant::now();
        assert_eq!(conn.next_look(t), opened + 5 * S, "looked at while idle");
        tokio::time::advance(10 * S).await;
        assert!(conn.deadline(t).unwrap() > Instant::now());
        conn.bytes_arrived();
        let first_byte = Instant::now();
        assert_eq!(conn.next_look(t), first_byte + 5 * S);
        tokio::time::advance(5 * S).await;
        assert!(conn.deadline(t).unwrap() <= Instant::now(), "a slow head");
        let busy = conn.begin();
        assert_eq!(conn.deadline(t), None, "never while answering");
        tokio::time::advance(100 * S).await;
        drop(busy);
        let answered = Instant::now();
        assert_eq!(conn.deadline(t), Some(answered + 60 * S));
    }

    #[tokio::test(start_paused = true)]
    async fn http2_the_first_request_then_idle_and_none_while_streams_are_open() {
        let t = Timeouts {
            first: 10 * S,
            head: None,
            idle: 300 * S,
        };
        let table = Table::new();
        let conn = table.open(LOCAL, usize::MAX).0;
        let opened = Instant::now();
        assert_eq!(conn.deadline(t), Some(opened + 10 * S));
        tokio::time::advance(3 * S).await;
        let (one, two) = (conn.begin(), conn.begin());
        assert_eq!(conn.deadline(t), None, "streams are open");
        tokio::time::advance(100 * S).await;
        drop(one);
        assert_eq!(conn.deadline(t), None, "one stream is still open");
        drop(two);
        assert_eq!(
            conn.deadline(t),
            Some(opened + 103 * S + 300 * S),
            "idle from the end of its last stream"
        );
        assert!(conn.spoke());
    }
}
