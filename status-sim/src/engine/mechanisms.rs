//! The mechanisms' drivers: the shedding admission's waiters and deadlines, the culler's
//! looks and restarts, a balancer's held connections.

use std::time::Duration;

use status_core::Rng;
use status_traffic::cull::{next_look, FailureWindow, Look};
use status_traffic::limit::Lease;
use status_traffic::shed::{expiry, Expired};

use super::{Event, Frame, Sim, Timer};
use crate::node::{Node, NodeId, ShedEntry};
use crate::Ms;

impl Sim {
    /// A shed node starts `req` (arrived at `arrived`) under `lease`: a child request carries
    /// the work down, so that the deadline can answer `req` while the work goes on.
    pub(super) fn start(&mut self, node: NodeId, req: u32, arrived: Ms, lease: Lease) {
        let child = self.new_request(vec![Frame { node, slot: req }], None);
        let Node::Shed(shed) = &mut self.nodes[node.index()] else {
            unreachable!("a shed node")
        };
        let next = shed.next;
        let deadline = arrived + shed.settings.deadline;
        shed.entries
            .insert(req, ShedEntry::Running { lease, child });
        self.schedule(
            deadline.max(self.now),
            Event::Timer(node, Timer::Deadline(req)),
        );
        self.arrive(child, next);
    }

    /// A shed node hands the capacity there is now to its waiters; a waiter whose queue
    /// timeout has passed is answered an error instead, never started.
    pub(super) fn dispatch(&mut self, node: NodeId) {
        let now = self.now;
        let at = Duration::from_millis(now);
        let Node::Shed(shed) = &mut self.nodes[node.index()] else {
            unreachable!("a shed node")
        };
        // Those whose time ran out are refused first, by the layer's own rule.
        let (wait, why) = expiry(
            Duration::from_millis(shed.settings.queue_timeout),
            Duration::from_millis(shed.settings.deadline),
        );
        for req in shed.room.expire(at, wait) {
            self.expired(node, req, why);
        }
        loop {
            let Node::Shed(shed) = &mut self.nodes[node.index()] else {
                unreachable!("a shed node")
            };
            if shed.room.is_empty() {
                return;
            }
            let Some(lease) = shed.limiter.try_acquire(at) else {
                return;
            };
            let req = shed.room.next(at).expect("a waiter");
            let Some(ShedEntry::Waiting { arrived }) = shed.entries.remove(&req) else {
                unreachable!("a waiter is waiting")
            };
            if self.requests[req as usize].cancelled {
                // Cut off by a shed node above: nobody waits for it any more.
                lease.ignore();
            } else {
                self.start(node, req, arrived, lease);
            }
        }
    }

    /// A waiter of the shed `node` whose time ran out: refused, never started.
    fn expired(&mut self, node: NodeId, req: u32, why: Expired) {
        let Node::Shed(shed) = &mut self.nodes[node.index()] else {
            unreachable!("a shed node")
        };
        shed.entries.remove(&req);
        let counts = &mut self.counts[node.index()];
        match why {
            Expired::Deadline => counts.deadline += 1,
            _ => counts.queue_timeout += 1,
        }
        self.answer(req, false);
    }

    pub(super) fn timer(&mut self, node: NodeId, timer: Timer) {
        let now = self.now;
        let at = Duration::from_millis(now);
        match (&mut self.nodes[node.index()], timer) {
            (Node::Balancer(balancer), Timer::Release(i)) => balancer.outstanding[i as usize] -= 1,
            (Node::Shed(_), Timer::Expiry) => {
                // The waiter's time is up: the room says who has run out (it, unless it was
                // served or refused already).
                self.dispatch(node);
            }
            (Node::Shed(shed), Timer::Deadline(req)) => {
                if let Some(ShedEntry::Running { .. }) = shed.entries.get(&req) {
                    let Some(ShedEntry::Running { lease, child }) = shed.entries.remove(&req)
                    else {
                        unreachable!("just seen running")
                    };
                    lease.dropped(at);
                    self.counts[node.index()].deadline += 1;
                    self.cancel(child);
                    self.answer(req, false);
                    self.dispatch(node);
                }
            }
            (Node::Cull(cull), Timer::Look) => {
                let failures = cull.window.count(at);
                let uptime = Duration::from_millis(now - cull.started);
                let leaving = !self.in_rotation[node.index()];
                let decision = cull.policy.decide(failures, uptime, leaving);
                // The production culler's own step: the same wait from the same seed, the
                // same look once the budget answered.
                let next_look = now + look_after(&mut cull.rng, cull.settings.interval);
                let restart = now + cull.settings.restart;
                let budget = cull.budget;
                let look = Look::of(decision)
                    .unwrap_or_else(|| Look::granted(Ok(self.budgets[budget.0].take(at))));
                match look {
                    Look::Cull { .. } => {
                        self.in_rotation[node.index()] = false;
                        self.out_of_rotation += 1;
                        self.counts[node.index()].culled += 1;
                        self.schedule(restart, Event::Timer(node, Timer::Restart));
                    }
                    Look::Spent { .. } | Look::Unknown { .. } | Look::Unreachable(_) => {
                        self.counts[node.index()].denied += 1;
                    }
                    // The simulator's nodes have no fleet to share a failure with.
                    Look::Healthy | Look::Leaving | Look::TooYoung | Look::Shared(_) => {}
                }
                self.schedule(next_look, Event::Timer(node, Timer::Look));
            }
            (Node::Hedge(hedge), Timer::Hedge(req)) => {
                // Unanswered still: a second copy, if the budget pays for it.
                if hedge.entries.contains_key(&req) && hedge.hedger.try_hedge() {
                    let next = hedge.next;
                    let copy = self.new_request(vec![Frame { node, slot: req }], None);
                    let Node::Hedge(hedge) = &mut self.nodes[node.index()] else {
                        unreachable!("a hedge node")
                    };
                    if let Some(entry) = hedge.entries.get_mut(&req) {
                        entry.copies.push(copy);
                    }
                    self.counts[node.index()].hedged += 1;
                    self.arrive(copy, next);
                }
            }
            (Node::Cull(cull), Timer::Restart) => {
                cull.started = now;
                cull.window = FailureWindow::new(Duration::from_millis(cull.settings.window));
                let next = cull.next;
                self.in_rotation[node.index()] = true;
                self.out_of_rotation -= 1;
                self.fresh(next);
            }
            (node, timer) => unreachable!("{timer:?} for {node:?}"),
        }
    }

    /// Drops the work of `req` (a shed node's child) wherever it is, as dropping the layer's
    /// future drops the inner service's: each node on its way down gives back what it held
    /// for it (a queue's slot, a balancer's connection, the cascade's lease, ended as
    /// ignored), and its pending events are ignored. A copy of it waiting in a queue is
    /// skipped when its turn comes.
    pub(super) fn cancel(&mut self, req: u32) {
        let request = &mut self.requests[req as usize];
        request.cancelled = true;
        let stack = std::mem::take(&mut request.stack);
        for frame in stack.into_iter().rev() {
            let node = frame.node;
            match &mut self.nodes[node.index()] {
                Node::Queue { .. } => {
                    if let Some(started) = self.release_slot(node) {
                        self.serve(node, started);
                    }
                }
                Node::Balancer(balancer) => balancer.outstanding[frame.slot as usize] -= 1,
                Node::Cascade(cascade) => {
                    // As the pool counts a call its caller dropped: a drop, at once, that
                    // holds the backend back for nothing.
                    let at = Duration::from_millis(self.now);
                    if let Some(lease) = cascade.leases.remove(&req) {
                        lease.finish(at, status_traffic::limit::Outcome::Drop);
                    }
                    cascade.selector.abandon(&frame.slot, at);
                }
                // A cable, a retry, a cull node hold nothing for it; the shed frame at the
                // bottom is the node cancelling it.
                _ => {}
            }
        }
    }

    /// The nodes from `node` down start afresh (a restarted instance): faulty ones are up
    /// with a new time to failure.
    pub(super) fn fresh(&mut self, node: NodeId) {
        let now = self.now;
        let next = match &mut self.nodes[node.index()] {
            Node::Faulty(faulty) => {
                faulty.start(now);
                Some(faulty.next)
            }
            Node::DelayFixed { next, .. }
            | Node::DelayExponential { next, .. }
            | Node::Cable { next, .. }
            | Node::Queue { next, .. }
            | Node::Retry { next, .. } => Some(*next),
            Node::Shed(shed) => Some(shed.next),
            Node::Cull(cull) => Some(cull.next),
            Node::Hedge(hedge) => Some(hedge.next),
            Node::Server | Node::Balancer(_) | Node::Cascade(_) => None,
        };
        if let Some(next) = next {
            self.fresh(next);
        }
    }
}

/// The wait before a cull node's next look, in whole milliseconds: the production
/// culler's [`next_look`], from the node's own random stream.
pub(super) fn look_after(rng: &mut Rng, interval: Ms) -> Ms {
    let wait = next_look(Duration::from_millis(interval), rng);
    u64::try_from(wait.as_millis()).unwrap_or(Ms::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::exponential;

    #[test]
    fn exponential_delays_have_their_mean_and_can_be_zero() {
        let mut rng = Rng::new(3);
        let draws: Vec<Ms> = (0..100_000).map(|_| exponential(&mut rng, 10.0)).collect();
        let mean = draws.iter().sum::<Ms>() as f64 / draws.len() as f64;
        assert!((mean - 10.0).abs() < 0.15, "{mean}");
        assert!(draws.contains(&0));
    }
}
