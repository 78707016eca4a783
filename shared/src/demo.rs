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

/// The demo site, served until this is dropped.
#[derive(Debug)]
pub struct DemoSite {
    /// The running server.
    server: TestServer,
}

impl DemoSite {
    /// Serve the demo site on `127.0.0.1`, on a port the kernel picks.
    pub fn start() -> io::Result<DemoSite> {
        Ok(DemoSite {
            server: TestServer::try_start(demo_site())?,
        })
    }

    /// The URL to start crawling from.
    pub fn root(&self) -> String {
        self.server.url("/")
    }
}
