//! # Names, addresses and descriptors
//!
//! Small pieces every lesson needs before it can open a socket:
//!
//! - [`Resolver`]: each host name is resolved once per crawl (the spec's
//!   rule). Resolution is a blocking call into the C library in every lesson —
//!   the original tutorial does the same — so caching it keeps the blocking
//!   short and rare. A failed lookup is not cached: it is a `dns` failure that
//!   lesson 4 may retry.
//! - [`check_scheme`]: the course has no TLS, so an `https` URL ends as an
//!   `unsupported` error before any socket is made.
//! - [`socket_budget`]: how many sockets a crawl may hold open at once, from
//!   the process's open-file limit, so that every lesson can wait for a free
//!   descriptor instead of failing with "too many open files": lesson 1's
//!   threads, lessons 2 and 3's fetch per discovered link, lesson 4's
//!   workers.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Mutex;

use url::Url;

use crate::stats::{FailKind, FetchError};

/// The error `socket()`/`accept()` give when the process has no descriptor
/// left (`EMFILE` on Linux and macOS).
pub const EMFILE: i32 = 24;

/// Is this the "too many open files" error?
pub fn is_out_of_descriptors(err: &io::Error) -> bool {
    err.raw_os_error() == Some(EMFILE)
}

/// Refuse what the course cannot fetch: only `http` has no TLS to build.
pub fn check_scheme(url: &Url) -> Result<(), FetchError> {
    match url.scheme() {
        "http" => Ok(()),
        "https" => Err(FetchError::new(
            FailKind::Unsupported,
            "https not supported",
        )),
        other => Err(FetchError::new(
            FailKind::Unsupported,
            format!("{other} not supported"),
        )),
    }
}

/// Resolves host names, once per crawl. Shared by all of a crawl's threads
/// (lesson 1) or tasks (lessons 2–4), hence the `Mutex`.
#[derive(Debug, Default)]
pub struct Resolver {
    /// `(host, port)` → every address the lookup gave, in the order given:
    /// `localhost` may give `::1` first, and a lesson tries each in turn.
    cache: Mutex<HashMap<(String, u16), Vec<SocketAddr>>>,
}

impl Resolver {
    pub fn new() -> Self {
        Resolver::default()
    }

    /// The addresses of `url`'s host and port (default 80), from the cache
    /// when this host was already looked up.
    pub fn resolve(&self, url: &Url) -> Result<Vec<SocketAddr>, FetchError> {
        check_scheme(url)?;
        let host = url
            .host_str()
            .ok_or_else(|| FetchError::new(FailKind::Dns, "url has no host"))?;
        // `Url` keeps IPv6 literals bracketed; the resolver wants them bare.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = url.port_or_known_default().unwrap_or(80);
        let key = (host.to_string(), port);
        if let Some(addrs) = self.cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(addrs);
        }
        // The lock is not held during the lookup: a slow DNS answer for one
        // host must not stall lesson 1's other threads.
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| {
                FetchError::new(
                    FailKind::Dns,
                    format!("cannot resolve {host}: {}", crate::stats::io_message(&e)),
                )
            })?
            .collect();
        if addrs.is_empty() {
            return Err(FetchError::new(
                FailKind::Dns,
                format!("cannot resolve {host}: no addresses"),
            ));
        }
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, addrs.clone());
        }
        Ok(addrs)
    }
}

/// The soft limit on open files, read from `/proc/self/limits` (the course
/// uses no `libc` crate, so no `getrlimit`). `None` where that file does not
/// exist or says "unlimited".
pub fn open_files_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Descriptors the process holds open now (`/proc/self/fd`, less the one
/// the listing itself holds); `None` where there is no `/proc`.
pub fn open_descriptors() -> Option<usize> {
    let count = std::fs::read_dir("/proc/self/fd").ok()?.count();
    Some(count.saturating_sub(1))
}

/// Descriptors the process may still open: the open-file limit less those
/// open now. `None` where either cannot be read.
pub fn free_descriptors() -> Option<usize> {
    Some(open_files_limit()?.saturating_sub(open_descriptors()?))
}

/// How many sockets a crawl may hold open at once.
///
/// The open-file limit is shared by everything in the process, so the
/// budget is what is left of it: the limit, less the descriptors already
/// open (stdio, a poller, and with `--demo` the demo server's listener), less
/// a reserve for the few that come and go during the crawl (the resolver
/// reads `/etc/hosts` and opens a socket to a name server; a lesson's
/// poller is made after this count).
///
/// `descriptors_per_socket` is 2 when the server runs in this same process
/// (`--demo`): it holds the other end of every connection, so each socket
/// the crawler opens costs two descriptors. Counting only the crawler's
/// half, the crawler would take them all, the server could not `accept`, and
/// every fetch would wait for an answer that cannot come.
///
/// The budget is a best guess, not a promise: a lesson that runs out of
/// descriptors anyway (`EMFILE`) waits for one of its own sockets to close.
pub fn socket_budget(descriptors_per_socket: usize) -> usize {
    let Some(limit) = open_files_limit() else {
        return 4096;
    };
    let open = open_descriptors().unwrap_or(0);
    // 64 where descriptors are plenty; under a tight limit, less, so that a
    // limit of 64 still leaves room for about 55 sockets, and one of 16 for
    // about 7.
    let reserve = (limit / 16).clamp(4, 64);
    let free = limit.saturating_sub(open + reserve);
    (free / descriptors_per_socket.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_is_refused_before_any_socket() {
        let url = Url::parse("https://example.com/").unwrap();
        let err = Resolver::new().resolve(&url).unwrap_err();
        assert_eq!(err.kind, FailKind::Unsupported);
        assert_eq!(err.message, "https not supported");
    }

    #[test]
    fn ip_literals_resolve_without_dns_and_are_cached() {
        let resolver = Resolver::new();
        let url = Url::parse("http://127.0.0.1:8080/x").unwrap();
        let addrs = resolver.resolve(&url).unwrap();
        assert_eq!(addrs, vec!["127.0.0.1:8080".parse().unwrap()]);
        assert_eq!(resolver.cache.lock().unwrap().len(), 1);
        let v6 = Url::parse("http://[::1]/").unwrap();
        assert_eq!(
            resolver.resolve(&v6).unwrap(),
            vec!["[::1]:80".parse().unwrap()]
        );
    }

    #[test]
    fn the_socket_budget_leaves_a_reserve() {
        if let Some(limit) = open_files_limit() {
            let open = open_descriptors().unwrap();
            assert!(open >= 3, "stdio at least: {open}");
            assert!(socket_budget(1) + open < limit);
            // A server in the same process holds the other end of each.
            assert!(2 * socket_budget(2) + open < limit);
        }
        assert!(socket_budget(1) >= 1);
        assert!(socket_budget(2) >= 1);
    }
}
