//! What a failed `accept` calls for: out of file descriptors, shed the longest idle
//! connection, and say what is true when none can go.

use std::io;

use super::conn::Table;

/// What a failed `accept` calls for.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Accept {
    /// The connection died in the backlog: nothing to do.
    Gone,
    /// Out of descriptors, and room is coming: a connection was shed now, or shed ones are
    /// still closing.
    Room,
    /// Out of descriptors with every open connection answering a request (how many).
    AllBusy(usize),
    /// Anything else.
    Failed,
}

/// Judges a failed `accept` when out of descriptors (EMFILE, ENFILE): room is coming when
/// connections shed earlier are still closing; else the longest idle one is shed now.
/// `tasks`: the connections whose tasks still run, shed ones included.
pub(super) fn out_of_descriptors(error: &io::Error, table: &Table, tasks: usize) -> Accept {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return Accept::Gone;
    }
    if !matches!(error.raw_os_error(), Some(23 | 24)) {
        return Accept::Failed;
    }
    let open = table.len();
    // Connections shed before and still closing free their descriptors soon: shedding
    // another now could close the newest arrival (a probe) for nothing.
    if tasks > open || table.shed_one() {
        Accept::Room
    } else {
        Accept::AllBusy(open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn out_of_descriptors_says_what_is_true() {
        let emfile = io::Error::from_raw_os_error(24);
        let table = Table::new();
        let busy = table.open();
        busy.begin_request();
        let idle = table.open();
        // An idle connection to shed: room.
        assert_eq!(out_of_descriptors(&emfile, &table, 2), Accept::Room);
        // The idle one shed but its task still closing: room is coming, no warning (the
        // report: a flood of idle connections warned that every connection was busy).
        assert_eq!(out_of_descriptors(&emfile, &table, 2), Accept::Room);
        drop(idle);
        // Its task gone too: the one left is busy, and that is what is said.
        assert_eq!(out_of_descriptors(&emfile, &table, 1), Accept::AllBusy(1));
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(out_of_descriptors(&reset, &table, 1), Accept::Gone);
        assert_eq!(
            out_of_descriptors(&io::Error::other("boom"), &table, 1),
            Accept::Failed
        );
    }
}
