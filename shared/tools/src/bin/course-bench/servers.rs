//! The two servers the speed benchmark crawls, each a child process on a
//! free loopback port, stopped when dropped:
//!
//! - the course's own `serve` binary (the mio server from the fixtures,
//!   reading files with `StaticDir`): what a learner runs, single-threaded;
//! - nginx with a generated configuration in a temporary prefix: a real
//!   server, with one worker per core, that is not the bottleneck.
//!
//! Both run outside the bench process so that their CPU time is not charged
//! to the measuring process (the baseline fetcher runs in it).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::procs::children_of;
use anyhow::{bail, Context, Result};

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The course's `serve` binary.
    Fixture,
    /// nginx.
    Nginx,
}

impl Kind {
    /// As in file names and `--server`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fixture => "fixture",
            Kind::Nginx => "nginx",
        }
    }

    /// As in table titles.
    pub fn title(self) -> &'static str {
        match self {
            Kind::Fixture => "the course's `serve` (one thread, mio)",
            Kind::Nginx => "nginx",
        }
    }
}

/// Where nginx is, if it is installed.
pub fn find_nginx() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("/usr/sbin/nginx")];
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("nginx")));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// What to print when nginx is missing.
pub const NGINX_MISSING: &str = "nginx is not installed, so the nginx part is skipped \
     (install it with `apt-get install nginx-light` on Debian or Ubuntu)";

/// A free port on 127.0.0.1 (bind to port 0, read it, let go). Another
/// process could take it in between; the server start then fails loudly.
fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// A running site server.
#[derive(Debug)]
pub struct Server {
    /// Which one.
    pub kind: Kind,
    /// Its address on 127.0.0.1.
    pub addr: SocketAddr,
    /// The process (nginx's master process).
    child: Child,
    /// `serve` prints its address on stdout; the pipe is kept open so that
    /// a later line could not kill it with SIGPIPE.
    _stdout: Option<ChildStdout>,
    /// nginx's temporary prefix (config, pid, logs), removed on stop.
    prefix: Option<PathBuf>,
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Start the course's `serve` on a free port, serving `dir`. It picks
    /// the port itself (`--port 0`) and prints it.
    pub fn fixture(serve: &Path, dir: &Path) -> Result<Server> {
        let mut child = Command::new(serve)
            .arg(dir)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", serve.display()))?;
        let stdout = child.stdout.take().context("serve's stdout")?;
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .context("reading serve's address")?;
        // "serving DIR at http://127.0.0.1:PORT/ (also ...)"
        let port = line
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|p| p.parse::<u16>().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("serve did not print its address (it said {line:?})");
        };
        let server = Server {
            kind: Kind::Fixture,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            child,
            _stdout: Some(reader.into_inner()),
            prefix: None,
        };
        server.wait_until_listening()?;
        Ok(server)
    }

    /// Start nginx serving `dir` from a generated configuration in a new
    /// temporary prefix.
    pub fn nginx(nginx: &Path, dir: &Path, nofile: usize) -> Result<Server> {
        let prefix =
            std::env::temp_dir().join(format!("course-bench-nginx-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&prefix);
        std::fs::create_dir_all(prefix.join("tmp")).context("creating nginx's prefix")?;
        let port = free_port()?;
        let conf = prefix.join("nginx.conf");
        std::fs::write(&conf, nginx_conf(&prefix, dir, port, nofile))
            .context("writing nginx.conf")?;
        let spawned = Command::new(nginx)
            .arg("-p")
            .arg(&prefix)
            .arg("-c")
            .arg(&conf)
            // Where errors go before the config is read (nginx 1.19.5+);
            // otherwise it would try /var/log/nginx.
            .arg("-e")
            .arg(prefix.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&prefix);
                return Err(e).with_context(|| format!("starting {}", nginx.display()));
            }
        };
        let server = Server {
            kind: Kind::Nginx,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            child,
            _stdout: None,
            prefix: Some(prefix.clone()),
        };
        if let Err(e) = server.wait_until_listening() {
            let log = std::fs::read_to_string(prefix.join("error.log")).unwrap_or_default();
            bail!(
                "{e:#}; nginx's error log says:\n{}",
                crate::procs::tail(&log, 2000)
            );
        }
        Ok(server)
    }

    /// Connect until it answers (or it exits, or 20 s pass).
    fn wait_until_listening(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "{} did not start listening on {}",
                    self.kind.name(),
                    self.addr
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// CPU time the server has used so far (nginx: master and workers).
    pub fn cpu(&self) -> Duration {
        let me = self.child.id();
        std::iter::once(me)
            .chain(children_of(me))
            .filter_map(|pid| crate::procs::cpu_of(Some(pid)))
            .map(crate::procs::Cpu::total)
            .sum()
    }

    /// Stop it. For nginx that means SIGTERM to the master, which stops its
    /// workers; a SIGKILL would orphan them, still holding the port. Any
    /// worker still there after a few seconds is killed by PID.
    fn stop(&mut self) {
        if self.kind == Kind::Nginx {
            let workers = children_of(self.child.id());
            signal(self.child.id(), nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
            for pid in workers {
                if procfs::process::Process::new(pid as i32).is_ok() {
                    signal(pid, nix::sys::signal::Signal::SIGKILL);
                }
            }
        } else {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(prefix) = self.prefix.take() {
            // Anything nginx complained about (descriptors, connections)
            // explains odd figures, so it is shown before the log goes.
            let log = std::fs::read_to_string(prefix.join("error.log")).unwrap_or_default();
            let problems: Vec<&str> = log.lines().filter(|l| !l.contains("[notice]")).collect();
            if !problems.is_empty() {
                eprintln!(
                    "  nginx's error log ({} lines):\n{}",
                    problems.len(),
                    crate::procs::tail(&problems.join("\n"), 1500)
                );
            }
            let _ = std::fs::remove_dir_all(prefix);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Send `signal` to `pid`; a process already gone is no error here.
fn signal(pid: u32, signal: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// The nginx configuration: a static site, fast settings, nothing written
/// outside `prefix`.
fn nginx_conf(prefix: &Path, root: &Path, port: u16, nofile: usize) -> String {
    let p = prefix.display();
    // Started by root, nginx's workers would run as `nobody`, who cannot
    // read a folder under root's home (the toolchain's documentation, say):
    // they run as the bench's own user instead. Started by anyone else,
    // they are that user already, and the directive would only be warned of.
    let user = if nix::unistd::geteuid().is_root() {
        "user root;\n"
    } else {
        ""
    };
    format!(
        "# Written by course-bench; removed when the benchmark ends.
{user}daemon off;
master_process on;
worker_processes auto;
worker_rlimit_nofile {nofile};
pid {p}/nginx.pid;
error_log {p}/error.log warn;

events {{
    worker_connections {conns};
}}

http {{
    types {{
        text/html html htm;
        application/xml xml;
        text/plain txt;
        text/css css;
    }}
    default_type application/octet-stream;
    access_log off;
    # The generated site links to missing pages on purpose.
    log_not_found off;
    sendfile on;
    tcp_nodelay on;
    keepalive_requests 100000;
    keepalive_timeout 75s;
    # No open_file_cache: a cache larger than the descriptor limit makes
    # nginx answer 500 once the site has more files than descriptors.
    # A relative Location, as the course's serve sends.
    absolute_redirect off;
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;

    server {{
        listen 127.0.0.1:{port} backlog=4096;
        server_name localhost;
        root {root};
        index index.html;
    }}
}}
",
        conns = nofile / 2,
        root = root.display(),
    )
}
