//! A bounded queue of records and the thread that sends them in batches: what arrives when
//! the queue is full is dropped and counted, so a collector that is down or slow never holds
//! the listener, and through it never a check.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::sync::lock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most records one export carries.
pub(crate) const MAX_BATCH: usize = 512;
/// How long a record waits for others before its batch goes.
pub(crate) const BATCH_DELAY: Duration = Duration::from_secs(1);

/// The producer's side: [`push`](Self::push) never waits.
#[derive(Debug)]
pub(crate) struct Outbox<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Outbox<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

#[derive(Debug)]
struct Shared<T> {
    queue: Mutex<State<T>>,
    ready: Condvar,
    capacity: usize,
    dropped: AtomicU64,
}

#[derive(Debug)]
struct State<T> {
    records: VecDeque<T>,
    closed: bool,
}

impl<T: Send + 'static> Outbox<T> {
    /// An outbox of `capacity` records, sent by a thread named `name` with `send`, which is
    /// handed each batch (at most [`MAX_BATCH`]), may take as long as its exporter does, and
    /// says whether the batch went: the records of a batch that did not are counted dropped.
    pub(crate) fn start(
        name: &str,
        capacity: usize,
        mut send: impl FnMut(Vec<T>) -> bool + Send + 'static,
    ) -> std::io::Result<(Self, JoinHandle<()>)> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(State {
                records: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            capacity: capacity.max(1),
            dropped: AtomicU64::new(0),
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                while let Some(batch) = worker.next_batch() {
                    let n = batch.len() as u64;
                    if !send(batch) {
                        worker.dropped.fetch_add(n, Ordering::Relaxed);
                    }
                }
            })?;
        Ok((Self { shared }, thread))
    }

    /// Queues `record`, or drops and counts it when the queue is full.
    pub(crate) fn push(&self, record: T) {
        let mut state = lock(&self.shared.queue);
        if state.closed || state.records.len() >= self.shared.capacity {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        state.records.push_back(record);
        // The first record starts the batch's delay; a full batch goes at once.
        if state.records.len() == 1 || state.records.len() >= MAX_BATCH {
            self.shared.ready.notify_one();
        }
    }

    /// Records dropped so far: the queue was full, or their batch was not sent.
    pub(crate) fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Records waiting.
    pub(crate) fn queued(&self) -> usize {
        lock(&self.shared.queue).records.len()
    }

    /// Sends what waits, then ends the thread.
    pub(crate) fn close(&self) {
        lock(&self.shared.queue).closed = true;
        self.shared.ready.notify_one();
    }
}

impl<T> Shared<T> {
    /// The next batch: once a record has waited [`BATCH_DELAY`], or [`MAX_BATCH`] wait, or
    /// the outbox closes with records left. `None` once closed and empty.
    fn next_batch(&self) -> Option<Vec<T>> {
        let mut state = lock(&self.queue);
        loop {
            if state.records.is_empty() {
                if state.closed {
                    return None;
                }
                state = crate::sync::wait(&self.ready, state);
                continue;
            }
            let first = Instant::now();
            while !state.closed && state.records.len() < MAX_BATCH {
                let left = BATCH_DELAY.saturating_sub(first.elapsed());
                if left.is_zero() {
                    break;
                }
                state = crate::sync::wait_timeout(&self.ready, state, left);
            }
            let n = state.records.len().min(MAX_BATCH);
            return Some(state.records.drain(..n).collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_outbox_drops_and_counts_instead_of_waiting() {
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let (sent_tx, sent_rx) = std::sync::mpsc::channel::<usize>();
        let (outbox, thread) = Outbox::start("test-outbox", 4, move |batch: Vec<u32>| {
            // The first batch is held until the test lets it go: a collector that hangs.
            let _ = gate_rx.recv();
            sent_tx.send(batch.len()).unwrap();
            true
        })
        .unwrap();
        outbox.push(0);
        outbox.close();
        // Closing sends what waits at once; the sender is now stuck on its first batch.
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        for i in 1..=100 {
            outbox.push(i);
        }
        assert!(
            started.elapsed() < Duration::from_millis(50),
            "push never waits"
        );
        assert_eq!(outbox.dropped(), 100, "closed: everything after is dropped");
        gate_tx.send(()).unwrap();
        thread.join().unwrap();
        assert_eq!(sent_rx.try_iter().collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn a_lone_record_goes_once_it_has_waited_the_batch_delay() {
        let (sent_tx, sent_rx) = std::sync::mpsc::channel::<usize>();
        let (outbox, thread) = Outbox::start("test-outbox", 8, move |batch: Vec<u32>| {
            sent_tx.send(batch.len()).unwrap();
            true
        })
        .unwrap();
        // The sender is asleep on an empty queue: one record must wake it, not 512.
        std::thread::sleep(Duration::from_millis(50));
        outbox.push(1);
        let sent = sent_rx.recv_timeout(BATCH_DELAY * 3);
        assert_eq!(
            sent,
            Ok(1),
            "sent without waiting for a full batch or a close"
        );
        outbox.close();
        thread.join().unwrap();
    }

    #[test]
    fn records_beyond_the_capacity_are_dropped_while_the_sender_hangs() {
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let (outbox, thread) = Outbox::start("test-outbox", 8, move |_batch: Vec<u32>| {
            let _ = gate_rx.recv();
            false
        })
        .unwrap();
        for i in 0..1000 {
            outbox.push(i);
        }
        // The sender waits a second for a batch to fill: the queue holds 8, the rest is dropped.
        assert_eq!(outbox.queued(), 8);
        assert_eq!(outbox.dropped(), 992);
        drop(gate_tx);
        outbox.close();
        thread.join().unwrap();
        assert_eq!(
            outbox.dropped(),
            1000,
            "the 8 sent in a batch that failed count too"
        );
    }
}
