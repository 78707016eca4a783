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
//! Four things keep the pool honest:
//!
//! - **At most [`MAX_IDLE_PER_HOST`] idle connections per host.** More are
//!   closed on release: idle sockets cost the server as much as busy ones.
//! - **A limit on open sockets in total** (the process's descriptor budget,
//!   from `Config::socket_budget`), kept the way asyncio's `Semaphore` keeps
//!   its count: a number of free *slots*, and a line of waiting fetches,
//!   each a [`Future`] that is resolved when its turn comes. That is
//!   [`SocketLine`]: lessons 2 and 3's line of fetches waiting for a socket,
//!   which the crawler started itself, grown futures, since here a fetch is
//!   a task that awaits its turn. A fetch first
//!   [`acquire`](ConnectionPool::acquire)s what it will use: an idle
//!   connection to its host, or a free slot — free already, or freed by
//!   closing an idle connection to another host, or waited for. The waiting
//!   happens before the fetch's deadline starts, so "too many open files" is
//!   waited out, never reported as a timeout.
//! - **Whatever frees up goes to the first waiter, directly.** A slot given
//!   back, or a connection released while fetches wait, is handed to the
//!   oldest waiting fetch by resolving its future with it (a [`Grant`]):
//!   a connection to its host it reuses, one to another host it closes and
//!   replaces. Kept idle instead, a connection would be of no use to a fetch
//!   already waiting in line, and with a hundred workers sharing fifty
//!   descriptors the waiting ones would wait for a turn that never came.
//!   Handed *to* the waiter rather than left where it could look, nothing
//!   can be taken from under it by a fetch that arrives later.
//! - **A pooled connection may be stale**: the server may have closed it
//!   while it sat idle. That is only discovered by using it. The caller
//!   ([`crate::fetch`]) resends on a fresh connection when a reused one fails
//!   before any byte of the response arrived, in the stale one's slot.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::rc::{Rc, Weak};

use anyhow::Context;
use shared::net::{check_scheme, is_out_of_descriptors, Resolver};
use shared::trace::{self, Phase};
use shared::{FailKind, FetchError};
use url::Url;

use crate::event_loop::get_running_loop;
use crate::future::{is_cancelled, Future};
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
    /// The socket budget: its free slots, and the fetches waiting for
    /// what frees up (see the module text).
    line: SocketLine<Grant>,
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

/// What [`ConnectionPool::acquire`] gives a fetch: the socket it may use.
///
/// A fetch carries its grant into the attempt, through two coroutines that
/// each keep room for it while the fetch waits for its server; boxed, the
/// connection costs them a pointer each instead of its 48 bytes.
pub enum Grant {
    /// An open connection, to reuse (or, if it is to another host, to close
    /// and replace).
    Reuse(Box<Connection>),
    /// Room to open a new socket.
    Open(Permit),
}

// ANCHOR: socket_line
/// Lesson 2's socket budget and its line, the way asyncio's `Semaphore`
/// keeps them: a count of free slots out of a limit, and the fetches
/// waiting, each on a [`Future`] the line resolves with what frees up (a
/// `T`: for the pool, a [`Grant`]). Handed *to* the oldest waiter, what
/// frees up cannot be taken from under it by a fetch that arrives later.
/// It opens and closes nothing itself.
pub struct SocketLine<T> {
    /// Slots that may be taken without waiting.
    free: Cell<usize>,
    /// Slots in all: the budget, lowered for good by [`SocketLine::retire`].
    /// Every slot not free is taken.
    limit: Cell<usize>,
    /// The fetches waiting, oldest first. A waiter whose fetch was
    /// cancelled is done already, and passed by.
    waiters: RefCell<VecDeque<Future<T>>>,
}

impl<T: 'static> SocketLine<T> {
    /// A line with `limit` free slots (at least one: with none, every
    /// fetch would wait for ever) and nobody waiting.
    pub fn new(limit: usize) -> SocketLine<T> {
        SocketLine {
            free: Cell::new(limit.max(1)),
            limit: Cell::new(limit.max(1)),
            waiters: RefCell::new(VecDeque::new()),
        }
    }

    /// Take a free slot, if there is one.
    pub fn try_take(&self) -> bool {
        let free = self.free.get();
        if free > 0 {
            self.free.set(free - 1);
        }
        free > 0
    }

    /// Join the back of the line: the future is resolved with what frees
    /// up when this waiter's turn comes. (Made on the running loop, so
    /// called from a task.)
    pub fn join(&self) -> Future<T> {
        let waiter = get_running_loop().create_future();
        self.waiters.borrow_mut().push_back(waiter.clone());
        waiter
    }

    /// Something freed up: hand it to the oldest waiter still waiting, and
    /// say `None`; with nobody waiting, it comes back (`Some`), for the
    /// caller to keep.
    pub fn hand_over(&self, freed: T) -> Option<T> {
        loop {
            // Popped before it is resolved: never borrowed while a waiter
            // is told.
            let waiter = self.waiters.borrow_mut().pop_front();
            match waiter {
                Some(waiter) if waiter.done() => continue,
                Some(waiter) => {
                    waiter.set_result(freed);
                    return None;
                }
                None => return Some(freed),
            }
        }
    }

    /// A slot no waiter took: free again.
    pub fn give_back(&self) {
        self.free.set(self.free.get() + 1);
    }

    /// The process cannot hold more sockets than are taken now, less one
    /// (a connect just found no descriptor in its slot): that slot and
    /// every free one leave the budget for good.
    pub fn retire(&self) {
        let retired = self.free.replace(0) + 1;
        self.limit.set(self.limit.get().saturating_sub(retired));
    }

    /// Fetches waiting now (not those cancelled, which are passed by).
    pub fn waiting(&self) -> usize {
        self.waiters
            .borrow()
            .iter()
            .filter(|waiter| !waiter.done())
            .count()
    }

    /// Slots taken now.
    pub fn taken(&self) -> usize {
        self.limit.get().saturating_sub(self.free.get())
    }
}
// ANCHOR_END: socket_line

/// A fetch's place in the line for a socket, given up if the fetch is
/// cancelled (or dropped) while it waits: its future is cancelled, and
/// [`PoolInner::give`] passes it by. A waiter already handed its grant is
/// done, and cancelling it does nothing: the grant is dropped with it, and
/// gives its slot back.
struct LeaveLineOnDrop(Future<Grant>);

impl Drop for LeaveLineOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A connect found no file descriptor left, though the budget allowed one
/// more: the real limit is lower. Its slot and every free one are retired,
/// so the pool shrinks to the sockets it holds, and the fetch acquires
/// again: it waits until one of the pool's own sockets closes. Not the URL's
/// failure, and not a try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfDescriptors;

impl std::fmt::Display for OutOfDescriptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("out of file descriptors")
    }
}

impl std::error::Error for OutOfDescriptors {}

/// A connection taken from the pool. Dropping it closes it (and returns its
/// slot); [`ConnectionPool::release`] may keep it for reuse instead.
pub struct Connection {
    /// The open socket.
    socket: Socket,
    /// Where it connects to, for putting it back in the right place.
    /// Shared (`Rc`) rather than copied: a waiting fetch holds its
    /// connection, and every byte of it counts ten thousand times.
    key: Rc<PoolKey>,
    /// Did it come from the idle pool (and so may be stale)?
    reused: bool,
    /// Which of the pool's connections this is (1 for the first opened): a
    /// trace shows it, to make reuse visible.
    id: u32,
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
            pool.give_slot();
        }
    }
}

/// The right to open one socket. Dropped, it goes back to the pool — so a
/// connect that fails, is cancelled, or is abandoned by a deadline half-way
/// does not lose it — unless [`Permit::forget`] was called.
pub struct Permit {
    /// The pool whose slot it is. Weak, like a connection's: a permit
    /// inside a waiting fetch's future must not keep the pool alive.
    pool: Weak<PoolInner>,
}

impl Permit {
    /// Do not give the slot back: a connection holds it now (and gives it
    /// back when closed), or it is retired.
    fn forget(mut self) {
        self.pool = Weak::new();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.upgrade() {
            pool.give_slot();
        }
    }
}

impl PoolInner {
    /// A slot comes back (a socket closed, a permit was not used): to the
    /// oldest waiting fetch, or to the count of free ones.
    fn give_slot(self: &Rc<Self>) {
        self.give(Grant::Open(Permit {
            pool: Rc::downgrade(self),
        }));
    }

    /// Something frees up: hand it to the oldest fetch still waiting, or
    /// else keep it — a connection in its host's idle list (or closed, past
    /// the cap), a slot in the count of free ones.
    fn give(&self, grant: Grant) {
        match self.line.hand_over(grant) {
            None => {}
            Some(Grant::Reuse(connection)) => self.keep_idle(*connection),
            Some(Grant::Open(permit)) => {
                permit.forget();
                self.line.give_back();
            }
        }
    }

    /// Keep `connection` for reuse, if its host has room; else close it.
    fn keep_idle(&self, connection: Connection) {
        let mut hosts = self.hosts.borrow_mut();
        let host = hosts.entry(connection.key.clone()).or_default();
        if host.idle.len() < self.max_idle_per_host {
            host.idle.push(connection);
        } else {
            drop(hosts);
            drop(connection);
        }
    }
}

impl ConnectionPool {
    /// A pool that keeps up to `max_idle_per_host` idle connections per key
    /// and opens at most `limit` sockets at once.
    pub fn new(max_idle_per_host: usize, limit: usize) -> ConnectionPool {
        ConnectionPool {
            inner: Rc::new(PoolInner {
                resolver: Resolver::new(),
                hosts: RefCell::new(HashMap::new()),
                max_idle_per_host,
                line: SocketLine::new(limit),
                open: Cell::new(0),
                opened: Cell::new(0),
            }),
        }
    }

    // ANCHOR: acquire
    /// What a fetch of `url` will use: an idle connection to its host, or
    /// else a slot to open a new one — free at once, or freed by closing an
    /// idle connection to another host, or waited for. Only a cancellation
    /// comes out as an error. No deadline runs while this waits: a fetch that
    /// waits for a descriptor has not started yet.
    pub async fn acquire(&self, url: &Url) -> anyhow::Result<Grant> {
        let key = PoolKey::of(url);
        if let Some(connection) = key.as_ref().and_then(|key| self.take_idle(key)) {
            return Ok(Grant::Reuse(Box::new(connection)));
        }
        let line = &self.inner.line;
        let mut taken = line.try_take();
        if !taken {
            // Closing an idle connection frees its slot (to the first
            // waiter, if there is one: then we wait too).
            if let Some(connection) = self.evict_one_idle() {
                drop(connection);
                taken = line.try_take();
            }
        }
        let grant = if taken {
            Grant::Open(self.permit())
        } else {
            let waiter = line.join();
            // A fetch cancelled while it waits leaves the line: `give`
            // passes a cancelled waiter by, so what frees up goes to a
            // fetch that can use it.
            let _in_line = LeaveLineOnDrop(waiter.clone());
            waiter.await.context("waiting for a free socket")?
        };
        Ok(match grant {
            // Handed on for another host: close it, keep its slot.
            Grant::Reuse(connection) if key.as_ref() != Some(&*connection.key) => {
                Grant::Open(self.reopen(*connection))
            }
            grant => grant,
        })
    }

    /// Close `connection` but keep its slot, for a new socket in its place:
    /// the stale connection's resend, or a handed-on connection to another
    /// host. (Its `Drop` would give the slot away, to a waiting fetch.)
    pub fn reopen(&self, mut connection: Connection) -> Permit {
        connection.pool = Weak::new();
        drop(connection);
        self.inner.open.set(self.inner.open.get() - 1);
        self.permit()
    }

    /// A permit for a slot the caller has taken.
    fn permit(&self) -> Permit {
        Permit {
            pool: Rc::downgrade(&self.inner),
        }
    }
    // ANCHOR_END: acquire

    // ANCHOR: connect
    /// The connection `grant` stands for: the reused one, or a new one to
    /// `url`'s host opened in the granted slot. Errors are [`FetchError`]s
    /// (`unsupported`, `dns`, `connect`), [`OutOfDescriptors`], or a
    /// cancellation.
    ///
    /// (A function that returns an `async move` block rather than an `async
    /// fn`, for the reason [`crate::fetch`] gives: a fetch waiting for its
    /// server was in here a moment ago, and keeps room for it.)
    #[expect(clippy::manual_async_fn, reason = "an async fn keeps arguments twice")]
    pub fn connect<'a>(
        &'a self,
        url: &'a Url,
        grant: Grant,
    ) -> impl std::future::Future<Output = anyhow::Result<Connection>> + 'a {
        async move {
            let permit = match grant {
                Grant::Reuse(connection) => {
                    let mut connection = *connection;
                    connection.reused = true;
                    trace::connection(connection.id, true);
                    return Ok(connection);
                }
                Grant::Open(permit) => permit,
            };
            check_scheme(url)?;
            let key = self.shared_key(url)?;
            trace::phase(Phase::Resolve);
            let addrs = self.addresses(url, &key)?;
            trace::phase(Phase::Connect);
            let mut last_error = None;
            // `localhost` may resolve to `::1` first, where nothing listens:
            // each address in turn.
            for addr in addrs.iter() {
                match Socket::connect(addr).await {
                    Ok(socket) => return Ok(self.new_connection(socket, &key, permit)),
                    // The slot was never usable: retire it, and have the
                    // fetch acquire again (it waits for one of our own
                    // sockets to close). With none of ours open, nothing
                    // would ever close: that is a real failure, reported
                    // below.
                    Err(err) if self.out_of_descriptors(&err) => {
                        permit.forget();
                        self.retire_free_slots();
                        return Err(OutOfDescriptors.into());
                    }
                    Err(err) if is_cancelled(&err) => return Err(err),
                    Err(err) => last_error = Some(connect_error(addr, &err).into()),
                }
                // A permit that is not handed to a connection goes back as
                // it is dropped: after a failure, and also if this coroutine
                // is cancelled or abandoned by a deadline half-way.
            }
            // No address at all: a name that resolved to nothing is a
            // `dns` error, as the resolver itself says it.
            Err(last_error.unwrap_or_else(|| {
                FetchError::new(FailKind::Dns, "no address to connect to").into()
            }))
        }
    }

    /// The process cannot open more sockets than the pool has open now:
    /// the free slots are retired, so that fetches wait for one of the
    /// pool's sockets to close rather than each find out for itself.
    fn retire_free_slots(&self) {
        self.inner.line.retire();
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
        // Wraps after four billion connections: an id only a trace shows.
        let id = self.inner.opened.get() as u32;
        trace::connection(id, false);
        Connection {
            socket,
            key: key.clone(),
            reused: false,
            id,
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
    /// the next connect asks again. That first lookup blocks the whole loop:
    /// the C library's `getaddrinfo` has no non-blocking form, and a
    /// production runtime would run it on a thread of its own (see "The
    /// road to tokio" in the book).
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

    /// An idle connection to `key`'s host, if one is kept.
    fn take_idle(&self, key: &PoolKey) -> Option<Connection> {
        let mut hosts = self.inner.hosts.borrow_mut();
        hosts.get_mut(key).and_then(|host| host.idle.pop())
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
        if reusable {
            // To a waiting fetch if there is one, else idle.
            self.inner.give(Grant::Reuse(Box::new(connection)));
        }
        // Otherwise it is dropped here, closed, and its slot given back.
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

    /// Fetches waiting for a socket now (not those cancelled, which `give`
    /// will pass by).
    pub fn waiting_count(&self) -> usize {
        self.inner.line.waiting()
    }

    /// Sockets open now (idle or in use).
    pub fn open_count(&self) -> usize {
        self.inner.open.get()
    }

    /// Places of the budget taken now, by an open socket (idle or in use)
    /// or a permit to open one: 0 once every fetch has given its place
    /// back and the idle connections are closed.
    pub fn taken_count(&self) -> usize {
        self.inner.line.taken()
    }

    /// Connections opened so far.
    pub fn opened_count(&self) -> usize {
        self.inner.opened.get()
    }

    /// Close the idle connections to `url`'s host (the one robots.txt was
    /// fetched on: the site's pages then start on fresh connections, as
    /// they would without it).
    pub fn close_idle_to(&self, url: &Url) {
        let idle = PoolKey::of(url).and_then(|key| {
            let mut hosts = self.inner.hosts.borrow_mut();
            hosts
                .get_mut(&key)
                .map(|host| std::mem::take(&mut host.idle))
        });
        // Closed here, outside the borrow of the hosts table.
        drop(idle);
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
