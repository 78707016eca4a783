//! The baseline a crawl is compared with: "a plain keep-alive fetch of the
//! same URL list at the same concurrency with no parsing".
//!
//! It knows the URL list in advance (a crawler must discover it), so it
//! never waits for a page to arrive before it can ask for the next; it does
//! not look at bodies beyond their framing; it reuses one HTTP/1.1
//! connection per worker. What is left is the cost of moving the bytes
//! through the kernel and the server — the floor under any crawler on this
//! machine. `C` blocking threads each hold one connection and pull the next
//! URL from a shared counter, the simplest way to keep `C` requests in
//! flight.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

/// What one baseline run did.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Wall time from the first connect to the last byte.
    pub elapsed: Duration,
    /// Responses read.
    pub responses: usize,
    /// Body bytes read.
    pub body_bytes: u64,
    /// Status → count.
    pub statuses: BTreeMap<u16, usize>,
    /// TCP connections opened (more than the concurrency only if the server
    /// closed some).
    pub connections: usize,
    /// Requests that failed once and were sent again on a new connection:
    /// a healthy run has none.
    pub retries: usize,
    /// The first such failure, to say what went wrong.
    pub first_retry_error: Option<String>,
}

/// One worker's tally.
/// (The fields mean what [`Fetched`]'s do, for one worker.)
#[derive(Debug, Default)]
struct Tally {
    /// Responses read.
    responses: usize,
    /// Body bytes read.
    body_bytes: u64,
    /// Status → count.
    statuses: BTreeMap<u16, usize>,
    /// Connections opened.
    connections: usize,
    /// Requests sent a second time.
    retries: usize,
    /// The first failure that caused a retry.
    first_retry_error: Option<String>,
}

/// Fetch every path in `paths` from `addr` with `concurrency` keep-alive
/// connections. Fails if any URL could not be fetched (after one retry on a
/// fresh connection): a baseline that skipped URLs would flatter nobody.
/// With `cpus`, every thread runs on the first `cpus` of the CPUs this
/// process may use ([`hold_to_cpus`]), and on no other.
pub fn fetch_all(
    addr: SocketAddr,
    paths: &Arc<Vec<String>>,
    concurrency: usize,
    cpus: Option<usize>,
) -> Result<Fetched> {
    let next = Arc::new(AtomicUsize::new(0));
    let host = addr.to_string();
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let paths = Arc::clone(paths);
            let next = Arc::clone(&next);
            let host = host.clone();
            std::thread::spawn(move || {
                if let Some(cpus) = cpus {
                    hold_to_cpus(cpus)?;
                }
                worker(addr, &host, &paths, &next)
            })
        })
        .collect();
    let mut total = Tally::default();
    let mut first_error = None;
    for w in workers {
        match w.join() {
            Ok(Ok(t)) => {
                total.responses += t.responses;
                total.body_bytes += t.body_bytes;
                total.connections += t.connections;
                total.retries += t.retries;
                total.first_retry_error = total.first_retry_error.or(t.first_retry_error);
                for (s, n) in t.statuses {
                    *total.statuses.entry(s).or_default() += n;
                }
            }
            Ok(Err(e)) => first_error = first_error.or(Some(e.to_string())),
            Err(_) => first_error = first_error.or(Some("a worker panicked".to_string())),
        }
    }
    let elapsed = started.elapsed();
    if let Some(e) = first_error {
        bail!("baseline fetch failed: {e}");
    }
    if total.responses != paths.len() {
        bail!(
            "baseline fetched {} of {} URLs",
            total.responses,
            paths.len()
        );
    }
    Ok(Fetched {
        elapsed,
        responses: total.responses,
        body_bytes: total.body_bytes,
        statuses: total.statuses,
        connections: total.connections,
        retries: total.retries,
        first_retry_error: total.first_retry_error,
    })
}

/// The row of a baseline held to `cpus` CPUs: its label, and how it ran.
pub fn held_row(cpus: usize, concurrency: usize) -> (String, String) {
    let (label, held_to) = if cpus == 1 {
        ("one CPU".to_string(), "one CPU".to_string())
    } else {
        (format!("{cpus} CPUs"), format!("the first {cpus} CPUs"))
    };
    (
        format!("baseline on {label}"),
        format!("{concurrency} keep-alive connections, URL list known, threads held to {held_to}"),
    )
}

/// Keep the calling thread on the first `cpus` of the CPUs it may run on
/// (on Linux, `sched_setaffinity` of pid 0 is the calling thread alone).
fn hold_to_cpus(cpus: usize) -> io::Result<()> {
    use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let allowed = sched_getaffinity(Pid::from_raw(0)).map_err(io::Error::from)?;
    let mut held = CpuSet::new();
    for cpu in (0..CpuSet::count())
        .filter(|&cpu| allowed.is_set(cpu).unwrap_or(false))
        .take(cpus.max(1))
    {
        held.set(cpu).map_err(io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(0), &held).map_err(io::Error::from)
}

/// One connection's loop: take a path, fetch it, repeat.
fn worker(addr: SocketAddr, host: &str, paths: &[String], next: &AtomicUsize) -> io::Result<Tally> {
    let mut tally = Tally::default();
    let mut conn: Option<BufReader<TcpStream>> = None;
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = paths.get(i) else {
            return Ok(tally);
        };
        let mut tries = 0;
        loop {
            tries += 1;
            if conn.is_none() {
                let stream = TcpStream::connect(addr)?;
                stream.set_nodelay(true)?;
                stream.set_read_timeout(Some(Duration::from_secs(30)))?;
                conn = Some(BufReader::with_capacity(64 * 1024, stream));
                tally.connections += 1;
            }
            let Some(c) = conn.as_mut() else { continue };
            match fetch(c, host, path) {
                Ok((status, body, keep)) => {
                    tally.responses += 1;
                    tally.body_bytes += body;
                    *tally.statuses.entry(status).or_default() += 1;
                    if !keep {
                        conn = None;
                    }
                    break;
                }
                // A kept-alive connection the server closed: once more on a
                // fresh one, as any HTTP client does.
                Err(e) if tries == 1 => {
                    tally.retries += 1;
                    if tally.first_retry_error.is_none() {
                        tally.first_retry_error = Some(format!("{path}: {e}"));
                    }
                    conn = None;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// Send one GET and read its response: (status, body bytes, keep-alive?).
fn fetch(conn: &mut BufReader<TcpStream>, host: &str, path: &str) -> io::Result<(u16, u64, bool)> {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: course-bench\r\n\r\n");
    conn.get_mut().write_all(request.as_bytes())?;

    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed"));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("bad status line"))?;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut keep = true;
    loop {
        line.clear();
        if conn.read_line(&mut line)? == 0 {
            return Err(bad("closed in the headers"));
        }
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().ok(),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => keep = !value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
    }
    let body = if status == 204 || status == 304 || (100..200).contains(&status) {
        0
    } else if chunked {
        let mut total = 0;
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = u64::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    line.clear();
                    if conn.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break total;
            }
            discard(conn, size)?;
            discard(conn, 2)?;
            total += size;
        }
    } else if let Some(n) = length {
        discard(conn, n)?;
        n
    } else {
        // Delimited by the close: read to the end, then reconnect.
        keep = false;
        let mut total = 0;
        loop {
            let n = conn.fill_buf()?.len();
            if n == 0 {
                break total;
            }
            conn.consume(n);
            total += n as u64;
        }
    };
    Ok((status, body, keep))
}

/// Skip `n` bytes straight out of the reader's buffer (no copy).
fn discard(conn: &mut BufReader<TcpStream>, mut n: u64) -> io::Result<()> {
    while n > 0 {
        let buf = conn.fill_buf()?;
        if buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed in the body",
            ));
        }
        let k = buf.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        conn.consume(k);
        n -= k as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread held to one CPU runs on the first CPU it was allowed alone,
    /// and the thread that started it keeps its own.
    #[test]
    fn a_held_thread_has_only_the_first_cpus() {
        use nix::sched::sched_getaffinity;
        use nix::unistd::Pid;
        let before = sched_getaffinity(Pid::from_raw(0)).expect("this thread's CPUs");
        let held = std::thread::spawn(|| {
            hold_to_cpus(1)?;
            sched_getaffinity(Pid::from_raw(0)).map_err(io::Error::from)
        })
        .join()
        .expect("the thread ran")
        .expect("held to one CPU");
        let set = |s: &nix::sched::CpuSet| {
            (0..nix::sched::CpuSet::count())
                .filter(|&cpu| s.is_set(cpu).unwrap_or(false))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            set(&held),
            set(&before)[..1],
            "a thread held to one CPU should be allowed the first of its CPUs and no other"
        );
        let after = sched_getaffinity(Pid::from_raw(0)).expect("this thread's CPUs");
        assert_eq!(
            set(&after),
            set(&before),
            "holding one thread should not change the CPUs of the thread that started it"
        );
    }

    #[test]
    fn held_rows_say_how_many_cpus() {
        assert_eq!(
            held_row(1, 100),
            (
                "baseline on one CPU".to_string(),
                "100 keep-alive connections, URL list known, threads held to one CPU".to_string()
            )
        );
        assert_eq!(held_row(2, 8).0, "baseline on 2 CPUs");
        assert!(held_row(2, 8)
            .1
            .ends_with("threads held to the first 2 CPUs"));
    }
}
