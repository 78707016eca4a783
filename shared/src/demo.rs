//! # `--demo`: a site to crawl with nothing else running
//!
//! Every lesson's `--demo` crawls the course's generated demo site, served
//! in the same process on a free loopback port, so a learner can run any
//! lesson before setting up a site of their own. The command line only asks
//! for it ([`crate::cli`]); this module is where the demo site and the
//! server that holds it meet.
//!
//! The server is the course's test server ([`crate::fixtures::server`]),
//! with its own thread and its own event loop. It shares one thing with the
//! crawl: the process's file descriptors, one for each end of every
//! connection — which is why `Config::socket_budget` halves the crawler's
//! share under `--demo`.

use std::io;

use crate::fixtures::server::TestServer;
use crate::fixtures::sitegen::demo_site;

/// Descriptors a crawl of the demo site needs besides those open when it
/// starts, at the least: a lesson's poller and its waker, and one
/// connection — a descriptor for the crawler's end and one for the
/// server's.
pub const DESCRIPTORS_NEEDED: usize = 4;

/// The demo site, served until this is dropped.
#[derive(Debug)]
pub struct DemoSite {
    /// The running server.
    server: TestServer,
}

impl DemoSite {
    /// Serve the demo site on `127.0.0.1`, on a port the kernel picks.
    ///
    /// Under an open-file limit too low for even one connection beside the
    /// server, this is an error that says so: the crawler's connect would
    /// succeed (the kernel completes it) while the server could not accept
    /// it, and the crawl would wait out its deadlines for nothing.
    pub fn start() -> io::Result<DemoSite> {
        let server = TestServer::try_start(demo_site())?;
        match crate::net::free_descriptors() {
            Some(free) if free < DESCRIPTORS_NEEDED => Err(io::Error::other(format!(
                "only {free} more files may be opened (ulimit -n); the demo site and \
                 the crawler need at least {DESCRIPTORS_NEEDED}"
            ))),
            _ => Ok(DemoSite { server }),
        }
    }

    /// The URL to start crawling from.
    pub fn root(&self) -> String {
        self.server.url("/")
    }
}
