//! Tests of `src/fetch.rs`, through its public API.

use std::time::Duration;

use shared::http::Limits;
use shared::log::{Level, Log};

use lesson4_asyncio_style::connection_pool::ConnectionPool;
use lesson4_asyncio_style::fetch::*;

#[test]
fn in_flight_counts_the_peak_not_the_total() {
    let session = Session::new(
        ConnectionPool::new(1, 1),
        Duration::from_secs(1),
        Limits::default(),
        "crawler-course",
        Log::capture(Level::Error),
    );
    {
        let _a = session.in_flight.start();
        let _b = session.in_flight.start();
    }
    let _c = session.in_flight.start();
    assert_eq!(
        session.in_flight.now(),
        1,
        "fetches in flight now: two started and ended, a third started"
    );
    assert_eq!(
        session.in_flight.peak(),
        2,
        "the most fetches in flight at once (the peak, not the total of three)"
    );
}
