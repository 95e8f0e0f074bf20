//! How a request moves: down through each node, and its answer back up.

use std::collections::VecDeque;
use std::time::Duration;

use status_traffic::limit::Outcome;

use super::{Event, Frame, Request, Sim, Timer};
use crate::node::{exponential, Balance, HedgeEntry, MinConn, Node, NodeId, ShedEntry};

impl Sim {
    /// A request reaches `node`.
    pub(super) fn arrive(&mut self, req: u32, node: NodeId) {
        if self.requests[req as usize].cancelled {
            return;
        }
        let now = self.now;
        self.counts[node.index()].arrived += 1;
        match &mut self.nodes[node.index()] {
            Node::Server => self.answer(req, true),
            &mut Node::DelayFixed { dt, next } => self.schedule(now + dt, Event::Arrive(req, next)),
            Node::DelayExponential { mean, rng, next } => {
                let (dt, next) = (exponential(rng, *mean), *next);
                self.schedule(now + dt, Event::Arrive(req, next));
            }
            &mut Node::Cable { dt, next } => {
                self.push(req, node, 0);
                self.schedule(now + dt, Event::Arrive(req, next));
            }
            Node::Queue {
                n,
                busy,
                waiting,
                next,
            } => {
                if *busy < *n {
                    *busy += 1;
                    let next = *next;
                    self.push(req, node, 0);
                    self.arrive(req, next);
                } else {
                    waiting.push_back(req);
                }
            }
            Node::Faulty(faulty) => {
                if faulty.look(now) {
                    let next = faulty.next;
                    self.arrive(req, next);
                } else {
                    self.counts[node.index()].refused += 1;
                    self.answer(req, false);
                }
            }
            &mut Node::Retry { next, .. } => {
                self.push(req, node, 1);
                self.arrive(req, next);
            }
            Node::Balancer(balancer) => {
                let picked = balancer.pick(&self.in_rotation, self.out_of_rotation == 0);
                if let Some(i) = picked {
                    balancer.outstanding[i] += 1;
                }
                let picked = picked.map(|i| (i, balancer.backends[i]));
                self.send_to(req, node, picked);
            }
            Node::Cascade(cascade) => {
                let at = Duration::from_millis(now);
                let limiters = &cascade.limiters;
                let in_rotation = &self.in_rotation;
                let backends = &cascade.backends;
                let all_in = self.out_of_rotation == 0;
                let taken = cascade.selector.cascade(at, &mut cascade.rng, |i| {
                    if !all_in && !in_rotation[backends[i].index()] {
                        return None;
                    }
                    limiters[i].try_acquire(at)
                });
                let picked = taken.map(|(i, lease)| {
                    cascade.leases.insert(req, lease);
                    (i, cascade.backends[i])
                });
                self.send_to(req, node, picked);
            }
            Node::Shed(shed) => {
                let at = Duration::from_millis(now);
                let lease = if shed.room.is_empty() {
                    shed.limiter.try_acquire(at)
                } else {
                    None
                };
                if let Some(lease) = lease {
                    self.start(node, req, now, lease);
                } else {
                    match shed.room.enter(req, 0, at) {
                        Err(_) => {
                            self.counts[node.index()].queue_full += 1;
                            self.answer(req, false);
                        }
                        Ok(evicted) => {
                            debug_assert!(evicted.is_none(), "one priority");
                            shed.entries
                                .insert(req, ShedEntry::Waiting { arrived: now });
                            let (wait, _) = status_traffic::shed::expiry(
                                Duration::from_millis(shed.settings.queue_timeout),
                                Duration::from_millis(shed.settings.deadline),
                            );
                            let wait = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                            self.schedule(now + wait, Event::Timer(node, Timer::Expiry));
                            self.dispatch(node);
                        }
                    }
                }
            }
            Node::Cull(cull) => {
                let next = cull.next;
                self.push(req, node, 0);
                self.arrive(req, next);
            }
            Node::Hedge(hedge) => {
                let delay = hedge.hedger.start();
                let next = hedge.next;
                let copy = self.new_request(vec![Frame { node, slot: req }], None);
                let Node::Hedge(hedge) = &mut self.nodes[node.index()] else {
                    unreachable!("a hedge node")
                };
                hedge.entries.insert(
                    req,
                    HedgeEntry {
                        copies: vec![copy],
                        arrived: now,
                    },
                );
                if let Some(delay) = delay {
                    let delay = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                    self.schedule(now + delay, Event::Timer(node, Timer::Hedge(req)));
                }
                self.arrive(copy, next);
            }
        }
    }

    /// The queue `node` gives up a slot: its next waiter still waited for takes it (that
    /// request and where it goes), or the slot stays free.
    pub(super) fn release_slot(&mut self, node: NodeId) -> Option<(u32, NodeId)> {
        let Node::Queue {
            busy,
            waiting,
            next,
            ..
        } = &mut self.nodes[node.index()]
        else {
            unreachable!("a queue node")
        };
        let started = next_waiter(waiting, &self.requests);
        if started.is_none() {
            *busy -= 1;
        }
        started.map(|req| (req, *next))
    }

    /// `req` takes a slot of the queue `node` and goes on to `next`.
    pub(super) fn serve(&mut self, node: NodeId, (req, next): (u32, NodeId)) {
        self.push(req, node, 0);
        self.arrive(req, next);
    }

    /// A balancer (`node`) sends `req` to the backend it `picked` (its index and node), or,
    /// having none, answers an error at once.
    fn send_to(&mut self, req: u32, node: NodeId, picked: Option<(usize, NodeId)>) {
        match picked {
            Some((i, next)) => {
                self.push(
                    req,
                    node,
                    u32::try_from(i).expect("fewer than 2^32 backends"),
                );
                self.arrive(req, next);
            }
            None => {
                self.counts[node.index()].refused += 1;
                self.answer(req, false);
            }
        }
    }

    /// An answer (`ok` or an error) reaches the top of `req`'s stack: the node that passed it
    /// down sees it, or, with the stack empty, its client does.
    pub(super) fn answer(&mut self, req: u32, ok: bool) {
        let request = &mut self.requests[req as usize];
        if request.cancelled {
            return;
        }
        let Some(frame) = request.stack.pop() else {
            // Done: its stack's memory goes back now, not at the end of the run.
            request.stack = Vec::new();
            let at = request
                .record
                .expect("only a load's request reaches its client") as usize;
            let record = &mut self.records[at];
            record.answered = self.now;
            record.ok = ok;
            self.answered += 1;
            return;
        };
        let now = self.now;
        let node = frame.node;
        match &mut self.nodes[node.index()] {
            &mut Node::Cable { dt, .. } => self.schedule(now + dt, Event::Return(req, ok)),
            Node::Queue { .. } => {
                let started = self.release_slot(node);
                self.answer(req, ok);
                if let Some(started) = started {
                    self.serve(node, started);
                }
            }
            &mut Node::Retry { n, next } => {
                if ok || frame.slot >= n {
                    self.answer(req, ok);
                } else {
                    self.push(req, node, frame.slot + 1);
                    self.arrive(req, next);
                }
            }
            Node::Balancer(balancer) => {
                let i = frame.slot;
                match balancer.how {
                    Balance::MinConn(MinConn { error_hold, .. }) if !ok && error_hold > 0 => {
                        self.schedule(now + error_hold, Event::Timer(node, Timer::Release(i)));
                    }
                    _ => balancer.outstanding[i as usize] -= 1,
                }
                self.answer(req, ok);
            }
            Node::Cascade(cascade) => {
                let at = Duration::from_millis(now);
                let outcome = if ok {
                    Outcome::Success
                } else {
                    Outcome::Ignore
                };
                if let Some(lease) = cascade.leases.remove(&req) {
                    lease.finish(at, outcome);
                }
                cascade.selector.record(&frame.slot, at, outcome);
                self.answer(req, ok);
            }
            Node::Shed(shed) => {
                // `req` is the child; the request it serves is in the frame.
                let parent = frame.slot;
                let at = Duration::from_millis(now);
                if let Some(ShedEntry::Running { child, .. }) = shed.entries.get(&parent) {
                    if *child == req {
                        let Some(ShedEntry::Running { lease, .. }) = shed.entries.remove(&parent)
                        else {
                            unreachable!("just seen running")
                        };
                        lease.finish(
                            at,
                            if ok {
                                Outcome::Success
                            } else {
                                Outcome::Ignore
                            },
                        );
                        self.answer(parent, ok);
                        self.dispatch(node);
                    }
                }
                // Otherwise the deadline answered it already: the late answer is dropped.
            }
            Node::Cull(cull) => {
                if !ok {
                    cull.window.record(Duration::from_millis(now), 1);
                }
                self.answer(req, ok);
            }
            Node::Hedge(hedge) => {
                // `req` is a copy; the request it serves is in the frame. The first copy to
                // answer answers it; the other is cancelled.
                let parent = frame.slot;
                if let Some(entry) = hedge.entries.remove(&parent) {
                    let by_hedge = entry.copies.first() != Some(&req);
                    hedge
                        .hedger
                        .finish(Duration::from_millis(now - entry.arrived), by_hedge);
                    for copy in entry.copies.into_iter().filter(|&c| c != req) {
                        self.cancel(copy);
                    }
                    self.answer(parent, ok);
                }
            }
            Node::Server
            | Node::DelayFixed { .. }
            | Node::DelayExponential { .. }
            | Node::Faulty(_) => unreachable!("these nodes push no frame"),
        }
    }
}

/// The next request of a queue's waiting line that was not cancelled meanwhile.
fn next_waiter(waiting: &mut VecDeque<u32>, requests: &[Request]) -> Option<u32> {
    std::iter::from_fn(|| waiting.pop_front()).find(|&r| !requests[r as usize].cancelled)
}
