//! The response future of [`Shed`](super::Shed).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Service};

use super::error::{Elapsed, QueueFull, QueueTimeout};
use super::queue::{count, Admission, Entry, Refusal, Shared};
use super::room::{expiry, Expired};
use crate::limit::{Outcome, Ticket};

pin_project! {
    /// The response of a [`Shed`](super::Shed): the inner service's, or why it was refused.
    ///
    /// Admitted at once, a request costs no allocation, no clone of the inner service and no
    /// timer: the deadline's timer is armed only if the inner future does not finish on its
    /// first poll.
    pub struct ResponseFuture<S, R>
    where
        S: Service<R>,
    {
        #[pin]
        state: State<S, R>,
        // Armed when the work first waits (queued, or the inner future pending).
        #[pin]
        timer: Option<Sleep>,
        shared: Arc<Shared<R>>,
        arrived: Instant,
        ticket: Option<Ticket>,
    }

    impl<S, R> PinnedDrop for ResponseFuture<S, R>
    where
        S: Service<R>,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // Dropped while working: the deadline cut it off, or the client went away.
            end(this.shared, this.ticket, Outcome::Drop);
        }
    }
}

pin_project! {
    #[project = StateProj]
    enum State<S, R>
    where
        S: Service<R>,
    {
        Refused { error: Option<BoxError> },
        Waiting { rx: oneshot::Receiver<Admission>, work: Option<(S, R)> },
        Running { #[pin] future: S::Future },
        Done,
    }
}

impl<S, R> ResponseFuture<S, R>
where
    S: Service<R>,
{
    /// Admits `request` or queues it. `inner` has been polled ready; admitted at once, it is
    /// called now; queued, `clone` replaces it in the service and it is called when admitted.
    pub(super) fn new(
        shared: Arc<Shared<R>>,
        priority: u8,
        inner: &mut S,
        request: R,
        arrived: Instant,
    ) -> Self
    where
        S: Clone,
    {
        let (state, ticket) = match shared.enter(priority, shared.since_epoch(arrived)) {
            Err(full) => {
                count(&shared.counts.queue_full);
                (
                    State::Refused {
                        error: Some(full.into()),
                    },
                    None,
                )
            }
            Ok(Entry::Now(ticket)) => (
                State::Running {
                    future: inner.call(request),
                },
                Some(ticket),
            ),
            Ok(Entry::Wait(rx)) => {
                let clone = inner.clone();
                let ready = std::mem::replace(inner, clone);
                (
                    State::Waiting {
                        rx,
                        work: Some((ready, request)),
                    },
                    None,
                )
            }
        };
        Self {
            state,
            timer: None,
            shared,
            arrived,
            ticket,
        }
    }
}

impl<S, R> Future for ResponseFuture<S, R>
where
    S: Service<R>,
    S::Error: Into<BoxError>,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let settings = this.shared.settings;
        let deadline = *this.arrived + settings.deadline;
        loop {
            match this.state.as_mut().project() {
                StateProj::Refused { error } => {
                    let error = error.take().expect("polled after completion");
                    this.state.set(State::Done);
                    return Poll::Ready(Err(error));
                }
                StateProj::Waiting { rx, work } => {
                    match Pin::new(rx).poll(cx) {
                        Poll::Ready(Ok(Ok(lease))) => {
                            let (mut inner, request) = work.take().expect("work to do");
                            *this.ticket = Some(lease.into_ticket());
                            this.state.set(State::Running {
                                future: inner.call(request),
                            });
                            continue;
                        }
                        Poll::Ready(Ok(Err(Refusal::Evicted))) => {
                            count(&this.shared.counts.queue_full);
                            this.state.set(State::Done);
                            return Poll::Ready(Err(QueueFull.into()));
                        }
                        Poll::Ready(Ok(Err(Refusal::Expired(why)))) => {
                            this.state.set(State::Done);
                            return Poll::Ready(Err(expired(this.shared, why)));
                        }
                        // The layer went away: as good as a timeout.
                        Poll::Ready(Err(_)) => {
                            count(&this.shared.counts.queue_timeout);
                            this.state.set(State::Done);
                            return Poll::Ready(Err(QueueTimeout.into()));
                        }
                        Poll::Pending => {}
                    }
                    // Waiting ends at the queue timeout, or at the deadline if that is sooner.
                    let (wait, why) = expiry(settings.queue_timeout, settings.deadline);
                    if this.timer.is_none() {
                        this.timer
                            .set(Some(tokio::time::sleep_until(*this.arrived + wait)));
                    }
                    let timer = this.timer.as_mut().as_pin_mut().expect("armed");
                    ready!(timer.poll(cx));
                    this.state.set(State::Done);
                    return Poll::Ready(Err(expired(this.shared, why)));
                }
                StateProj::Running { future } => {
                    if let Poll::Ready(result) = future.poll(cx) {
                        this.state.set(State::Done);
                        let result = result.map_err(Into::into);
                        let outcome = if result.is_ok() {
                            Outcome::Success
                        } else {
                            Outcome::Ignore
                        };
                        end(this.shared, this.ticket, outcome);
                        return Poll::Ready(result);
                    }
                    // Still working: the deadline applies (armed once; a queue timer, if
                    // any, is moved to the deadline).
                    match this.timer.as_mut().as_pin_mut() {
                        Some(timer) if timer.deadline() == deadline => {}
                        Some(timer) => timer.reset(deadline),
                        None => this.timer.set(Some(tokio::time::sleep_until(deadline))),
                    }
                    let timer = this.timer.as_mut().as_pin_mut().expect("armed");
                    ready!(timer.poll(cx));
                    // Cut off: the work is dropped now, its lease ends as a drop.
                    this.state.set(State::Done);
                    end(this.shared, this.ticket, Outcome::Drop);
                    count(&this.shared.counts.elapsed);
                    return Poll::Ready(Err(Elapsed.into()));
                }
                StateProj::Done => panic!("ResponseFuture polled after completion"),
            }
        }
    }
}

/// Ends the lease, if still held, as `outcome`; the capacity goes to the queue.
fn end<R>(shared: &Shared<R>, ticket: &mut Option<Ticket>, outcome: Outcome) {
    if let Some(ticket) = ticket.take() {
        shared.limiter.finish(ticket, shared.now(), outcome);
        shared.dispatch();
    }
}

impl<S, R> std::fmt::Debug for ResponseFuture<S, R>
where
    S: Service<R>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("arrived", &self.arrived)
            .field("leased", &self.ticket.is_some())
            .finish_non_exhaustive()
    }
}

/// The error of a waiter whose time ran out, counted.
fn expired<R>(shared: &Shared<R>, why: Expired) -> BoxError {
    match why {
        Expired::Deadline => {
            count(&shared.counts.elapsed);
            Elapsed.into()
        }
        Expired::QueueTimeout => {
            count(&shared.counts.queue_timeout);
            QueueTimeout.into()
        }
    }
}
