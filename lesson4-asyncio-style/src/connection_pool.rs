//! # The connection pool: HTTP/1.1 keep-alive
//!
//! The original crawler got connection reuse for free from aiohttp's
//! `ClientSession`. Lessons 1–3 open one connection per URL and close it
//! after the response (HTTP/1.0, `Connection: close`): a TCP handshake per
//! page, and a socket left in `TIME_WAIT` for each. Lesson 4 speaks HTTP/1.1
//! and keeps connections open: after a complete response that allows it
//! (`Response::reusable`), the connection goes back to the pool, and the
//! next fetch for the same scheme, host and port takes it instead of
//! connecting.
//!
//! Three things keep the pool honest:
//!
//! - **At most [`MAX_IDLE_PER_HOST`] idle connections per host.** More are
//!   closed on release: idle sockets cost the server as much as busy ones.
//! - **A limit on open sockets in total** (the process's descriptor budget,
//!   from `shared::net::socket_budget`). A fetch that needs a new socket when
//!   the budget is spent first closes an idle connection to another host, or
//!   else waits for one to be closed — "too many open files" is waited out,
//!   not crashed on. The budget is kept as a [`Queue`] of permits, one per
//!   socket that may be opened, the way Go programs use a buffered channel as
//!   a semaphore: the queue already knows how to make coroutines wait. A
//!   connect in progress holds its permit in a guard, so a connect that is
//!   abandoned half-way (its fetch's deadline passed) still gives it back.
//! - **A pooled connection may be stale**: the server may have closed it
//!   while it sat idle. That is only discovered by using it. The caller
//!   ([`crate::fetch`]) resends on a fresh connection when a reused one fails
//!   before any byte of the response arrived.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::{Rc, Weak};

use anyhow::Context;
use shared::net::{check_scheme, is_out_of_descriptors, Resolver};
use shared::{FailKind, FetchError};
use url::Url;

use crate::future::is_cancelled;
use crate::queue::Queue;
use crate::socket::Socket;

/// Idle connections kept per scheme, host and port.
pub const MAX_IDLE_PER_HOST: usize = 100;

/// What a pooled connection can be reused for: the same scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolKey {
    /// `http` (the only scheme the course can connect to).
    pub scheme: String,
    /// The host, as in the URL.
    pub host: String,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

impl PoolKey {
    /// The key of `url`; `None` for a URL without a host.
    pub fn of(url: &Url) -> Option<PoolKey> {
        Some(PoolKey {
            scheme: url.scheme().to_string(),
            host: url.host_str()?.to_string(),
            port: url.port_or_known_default()?,
        })
    }
}

/// The pool: a cheap handle (`Rc`) shared by every worker of a crawl.
#[derive(Clone)]
pub struct ConnectionPool {
    /// Shared by every clone of the pool.
    inner: Rc<PoolInner>,
}

struct PoolInner {
    /// Host names resolve once per crawl; the pool is what connects, so it
    /// holds the crawl's resolver.
    resolver: Resolver,
    /// What the pool knows per scheme, host and port. An entry stays once
    /// made: its key is the one every connection to that host shares.
    hosts: RefCell<HashMap<Rc<PoolKey>, Host>>,
    /// Idle connections kept per key.
    max_idle_per_host: usize,
    /// One item per socket that may still be opened (see the module text).
    permits: Queue<()>,
    /// Sockets open now, idle or in use.
    open: Cell<usize>,
    /// Connections opened over the pool's life (for tests and curiosity).
    opened: Cell<usize>,
}

/// What the pool keeps for one scheme, host and port.
#[derive(Default)]
struct Host {
    /// Idle connections, most recently used last (taken first: the least
    /// likely to have been closed by the server).
    idle: Vec<Connection>,
    /// The host's addresses, once looked up. Shared (`Rc`) with every
    /// connect in progress, which so holds no copy of its own.
    addrs: Option<Rc<[SocketAddr]>>,
}

/// A connection taken from the pool. Dropping it closes it (and returns its
/// permit); [`ConnectionPool::release`] may keep it for reuse instead.
pub struct Connection {
    /// The open socket.
    socket: Socket,
    /// Where it connects to, for putting it back in the right place.
    /// Shared (`Rc`) rather than copied: a waiting fetch holds its
    /// connection, and every byte of it counts ten thousand times.
    key: Rc<PoolKey>,
    /// Did it come from the idle pool (and so may be stale)?
    reused: bool,
    /// The pool, to count it as closed when dropped. Weak: idle connections
    /// live inside the pool, and must not keep it alive.
    pool: Weak<PoolInner>,
}

impl Connection {
    /// The socket, to send the request and read the response.
    pub fn socket(&mut self) -> &mut Socket {
        &mut self.socket
    }

    /// Did this connection come from the idle pool?
    pub fn reused(&self) -> bool {
        self.reused
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("key", &self.key)
            .field("reused", &self.reused)
            .field("socket", &self.socket)
            .finish()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.open.set(pool.open.get() - 1);
            pool.permits.put_nowait(());
        }
    }
}

/// The right to open one socket, taken from the pool's permits. Dropped, it
/// goes back — so a connect that fails, is cancelled, or is abandoned by a
/// deadline half-way does not lose it — unless [`Permit::forget`] was called.
struct Permit<'a> {
    /// The pool whose permits it counts in.
    pool: &'a PoolInner,
}

impl Permit<'_> {
    /// Do not give the permit back: a connection holds it now (and gives it
    /// back when closed), or it is retired.
    fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.pool.permits.put_nowait(());
    }
}

impl ConnectionPool {
    /// A pool that keeps up to `max_idle_per_host` idle connections per key
    /// and opens at most `limit` sockets at once.
    pub fn new(max_idle_per_host: usize, limit: usize) -> ConnectionPool {
        let permits = Queue::new();
        for _ in 0..limit.max(1) {
            permits.put_nowait(());
        }
        ConnectionPool {
            inner: Rc::new(PoolInner {
                resolver: Resolver::new(),
                hosts: RefCell::new(HashMap::new()),
                max_idle_per_host,
                permits,
                open: Cell::new(0),
                opened: Cell::new(0),
            }),
        }
    }

    // ANCHOR: connect
    /// A connection to `url`'s host: an idle one when there is one (unless
    /// `fresh` is asked for), else a new one. Errors are [`FetchError`]s
    /// (`unsupported`, `dns`, `connect`), or a cancellation.
    pub async fn connect(&self, url: &Url, fresh: bool) -> anyhow::Result<Connection> {
        check_scheme(url)?;
        let key = self.shared_key(url)?;
        if !fresh {
            let idle = self
                .inner
                .hosts
                .borrow_mut()
                .get_mut(&key)
                .and_then(|host| host.idle.pop());
            if let Some(mut connection) = idle {
                connection.reused = true;
                return Ok(connection);
            }
        }
        let addrs = self.addresses(url, &key)?;
        let mut last_error = None;
        // `localhost` may resolve to `::1` first, where nothing listens: each
        // address in turn, as the spec asks.
        for addr in addrs.iter() {
            let connected = loop {
                let permit = self.acquire_permit().await?;
                match Socket::connect(*addr).await {
                    // Out of descriptors, though the budget allowed one more:
                    // the real limit is lower. This permit is retired, so the
                    // pool shrinks to what the system allows, and the connect
                    // waits until one of our own sockets closes.
                    Err(err) if self.out_of_descriptors(&err) => permit.forget(),
                    connected => break connected.map(|socket| (socket, permit)),
                }
            };
            // A permit that is not handed to a connection goes back as it is
            // dropped: after a failure, and also if this coroutine is
            // cancelled or abandoned by a deadline half-way.
            match connected {
                Ok((socket, permit)) => return Ok(self.new_connection(socket, &key, permit)),
                Err(err) if is_cancelled(&err) => return Err(err),
                Err(err) => last_error = Some(connect_error(addr, &err).into()),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            FetchError::new(FailKind::Connect, "no address to connect to").into()
        }))
    }

    /// A connect failed for want of a descriptor while the pool has sockets
    /// of its own open (which will close, and free one).
    fn out_of_descriptors(&self, err: &anyhow::Error) -> bool {
        let out = err
            .downcast_ref::<std::io::Error>()
            .is_some_and(is_out_of_descriptors);
        out && self.inner.open.get() > 0
    }

    /// A new connection: it holds `permit` from now on, and gives it back
    /// when it is closed.
    fn new_connection(&self, socket: Socket, key: &Rc<PoolKey>, permit: Permit) -> Connection {
        permit.forget();
        self.inner.open.set(self.inner.open.get() + 1);
        self.inner.opened.set(self.inner.opened.get() + 1);
        Connection {
            socket,
            key: key.clone(),
            reused: false,
            pool: Rc::downgrade(&self.inner),
        }
    }
    // ANCHOR_END: connect

    /// The one `Rc` of `url`'s key that all connections to that host share
    /// (made on the first connect to the host). `None` for a URL without a
    /// host or port.
    fn shared_key(&self, url: &Url) -> Result<Rc<PoolKey>, FetchError> {
        let key =
            PoolKey::of(url).ok_or_else(|| FetchError::new(FailKind::Dns, "url has no host"))?;
        let mut hosts = self.inner.hosts.borrow_mut();
        if let Some((shared, _)) = hosts.get_key_value(&key) {
            return Ok(shared.clone());
        }
        let shared = Rc::new(key);
        hosts.insert(shared.clone(), Host::default());
        Ok(shared)
    }

    /// The addresses of `url`'s host (whose key is `key`), looked up through
    /// the crawl's resolver the first time. A failed lookup is not kept, so
    /// the next connect asks again.
    fn addresses(&self, url: &Url, key: &Rc<PoolKey>) -> Result<Rc<[SocketAddr]>, FetchError> {
        let known = self
            .inner
            .hosts
            .borrow()
            .get(key)
            .and_then(|host| host.addrs.clone());
        if let Some(addrs) = known {
            return Ok(addrs);
        }
        let addrs: Rc<[SocketAddr]> = self.inner.resolver.resolve(url)?.into();
        if let Some(host) = self.inner.hosts.borrow_mut().get_mut(key) {
            host.addrs = Some(addrs.clone());
        }
        Ok(addrs)
    }

    /// Take a permit to open a socket: at once if one is free; else by
    /// closing an idle connection (to any host); else by waiting.
    async fn acquire_permit(&self) -> anyhow::Result<Permit<'_>> {
        if self.inner.permits.get_nowait().is_none() {
            if let Some(connection) = self.evict_one_idle() {
                drop(connection);
            }
            if self.inner.permits.get_nowait().is_none() {
                self.inner
                    .permits
                    .get()
                    .await
                    .context("waiting for a free socket")?;
            }
        }
        Ok(Permit { pool: &self.inner })
    }

    /// Remove one idle connection, if any (to be closed by the caller,
    /// outside the borrow of the hosts table).
    fn evict_one_idle(&self) -> Option<Connection> {
        let mut hosts = self.inner.hosts.borrow_mut();
        hosts.values_mut().find_map(|host| host.idle.pop())
    }

    // ANCHOR: release
    /// Give a connection back after its response: kept for reuse when the
    /// response allows it and the host has room, closed otherwise.
    pub fn release(&self, connection: Connection, reusable: bool) {
        if !reusable {
            return;
        }
        let mut hosts = self.inner.hosts.borrow_mut();
        let host = hosts.entry(connection.key.clone()).or_default();
        if host.idle.len() < self.inner.max_idle_per_host {
            host.idle.push(connection);
        } else {
            drop(hosts);
            drop(connection);
        }
    }
    // ANCHOR_END: release

    /// Idle connections now.
    pub fn idle_count(&self) -> usize {
        self.inner
            .hosts
            .borrow()
            .values()
            .map(|host| host.idle.len())
            .sum()
    }

    /// Sockets open now (idle or in use).
    pub fn open_count(&self) -> usize {
        self.inner.open.get()
    }

    /// Connections opened so far.
    pub fn opened_count(&self) -> usize {
        self.inner.opened.get()
    }

    /// Close every idle connection.
    pub fn close(&self) {
        let idle: Vec<Connection> = self
            .inner
            .hosts
            .borrow_mut()
            .values_mut()
            .flat_map(|host| std::mem::take(&mut host.idle))
            .collect();
        drop(idle);
    }
}

/// A failed connect as the report shows it: `connect` (or `timeout`) and
/// the system's words.
fn connect_error(addr: &SocketAddr, err: &anyhow::Error) -> FetchError {
    match err.downcast_ref::<std::io::Error>() {
        Some(io) => {
            let fe = FetchError::from_io(io, true);
            FetchError::new(fe.kind, format!("connect to {addr}: {}", fe.message))
        }
        None => FetchError::new(FailKind::Connect, format!("connect to {addr}: {err:#}")),
    }
}
