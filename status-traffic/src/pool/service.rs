//! The pool as a tower service: a call goes to the first node of the cascade whose limiter
//! grants a lease.

// The pool's parts, as pool/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

impl<S, R> Service<R> for Pool<S, R>
where
    S: Service<R> + Clone,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, R>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Capacity is decided per call, by the nodes' limiters: no capacity fails fast.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Self::Future {
        let shared = &self.shared;
        let now = shared.now();
        let mut state = shared.lock();
        let State { selector, rng, .. } = &mut *state;
        let chosen = selector
            .cascade_with(now, rng, |_, node| {
                let lease = node.limiter.try_acquire(now);
                if lease.is_none() {
                    node.counts.no_capacity.fetch_add(1, Ordering::Relaxed);
                }
                lease
            })
            .map(|(i, lease)| {
                let node = selector.value(i);
                (
                    node.id,
                    node.service.clone(),
                    lease,
                    Arc::clone(&node.counts),
                )
            });
        drop(state);
        match chosen {
            Some((id, service, lease, counts)) => ResponseFuture::call(
                Arc::clone(shared),
                id,
                Oneshot::new(service, request),
                lease,
                counts,
            ),
            None => {
                shared.no_capacity.fetch_add(1, Ordering::Relaxed);
                ResponseFuture::no_capacity()
            }
        }
    }
}
