//! # `serve`: a local site for the crawlers, in one command
//!
//! The tutorial crawls a copy of the Python docs served on
//! `localhost:3000`. This binary is that server, built from the course's own
//! fixtures, so a learner needs nothing else installed:
//!
//! ```text
//! cargo run -p serve -- ./site --generate 500   # write a site, serve it
//! cargo run -p lesson1-threadpool               # crawl http://localhost:3000/
//! ```
//!
//! It serves a folder the way `python -m http.server` does
//! ([`shared::fixtures::static_files::StaticDir`]) from the course's
//! single-threaded mio event loop ([`shared::fixtures::server::TestServer`]),
//! on `127.0.0.1` only, until Ctrl-C. With `--generate N` it first writes a
//! generated N-page site into the folder; with `--delay MS` every answer
//! waits, which turns a fast local site into the slow one where concurrency
//! shows.
//!
//! The one thing it adds to the fixtures is its listening socket: the
//! kernel queues at most 128 connections waiting to be accepted on one
//! made by the standard library, and lesson 3 opens a connection for every
//! URL it knows at once — thousands, on a generated site. When the queue
//! overflows, the kernel drops handshakes (the client retries a second
//! later) and, now and then, resets a connection: a URL that fails for no
//! fault of the crawler's. So `serve` asks for a queue of 4,096 (the
//! kernel's usual cap, `net.core.somaxconn`), with the `socket2` crate.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use shared::fixtures::server::{Handler, Request, ServerOptions, TestServer};
use shared::fixtures::sitegen::{generate, SiteSpec};
use shared::fixtures::static_files::StaticDir;

const USAGE: &str = "\
serve: serve a folder over HTTP on 127.0.0.1, for the crawlers to crawl

Usage: serve DIR [--port PORT] [--delay MS] [--generate N [--page-bytes BYTES]]

Arguments:
  DIR                 the folder to serve (created by --generate if missing)

Options:
  --port PORT         port to listen on (default 3000; 0 picks a free one)
  --generate N        first write a generated site of N pages into DIR
  --page-bytes BYTES  size of each generated page (default 4096)
  --delay MS          answer every request only after MS milliseconds: a slow
                      server, to watch how many fetches a crawler keeps waiting
  -h, --help          print this help

The crawlers' default root, http://localhost:3000/, reaches the default port.
Stop the server with Ctrl-C.
";

/// What the command line asked for.
#[derive(Debug)]
struct Args {
    /// The folder to serve.
    dir: PathBuf,
    /// The port on 127.0.0.1.
    port: u16,
    /// Pages to generate into `dir` first, if any.
    generate: Option<usize>,
    /// Size of each generated page.
    page_bytes: usize,
    /// How long every answer waits (a timer in the server's loop, so a
    /// thousand waiting requests cost no threads).
    delay: Duration,
}

/// `Ok(None)` for `--help`; `Err` is the one-line usage error.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, String> {
    let mut dir: Option<PathBuf> = None;
    let mut port: u16 = 3000;
    let mut generate: Option<usize> = None;
    let mut page_bytes: Option<usize> = None;
    let mut delay = Duration::ZERO;

    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        if let Some(option) = arg.strip_prefix("--") {
            // Both `--port 8000` and `--port=8000`.
            let (name, inline) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (option, None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("--{name} needs a value"))
            };
            match name {
                "port" => {
                    let v = value()?;
                    port = v.parse().map_err(|_| format!("bad port: {v}"))?;
                }
                "generate" => {
                    let v = value()?;
                    match v.parse::<usize>() {
                        Ok(n) if n > 0 => generate = Some(n),
                        _ => return Err(format!("--generate needs a page count > 0, not {v}")),
                    }
                }
                "page-bytes" | "page_bytes" => {
                    let v = value()?;
                    page_bytes = Some(v.parse().map_err(|_| format!("bad page size: {v}"))?);
                }
                "delay" => {
                    let v = value()?;
                    let ms: u64 = v.parse().map_err(|_| format!("bad delay in ms: {v}"))?;
                    delay = Duration::from_millis(ms);
                }
                _ => return Err(format!("unknown option: {arg}")),
            }
        } else if arg.starts_with('-') && arg.len() > 1 {
            return Err(format!("unknown option: {arg}"));
        } else if dir.is_some() {
            return Err(format!("only one DIR, but also got: {arg}"));
        } else {
            dir = Some(PathBuf::from(arg));
        }
    }

    let dir = dir.ok_or("missing DIR (the folder to serve)")?;
    if page_bytes.is_some() && generate.is_none() {
        return Err("--page-bytes only makes sense with --generate".to_string());
    }
    if generate.is_none() && !dir.is_dir() {
        return Err(format!(
            "{} is not a folder (add --generate N to create a site there)",
            dir.display()
        ));
    }
    Ok(Some(Args {
        dir,
        port,
        generate,
        page_bytes: page_bytes.unwrap_or(SiteSpec::default().page_bytes),
        delay,
    }))
}

fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("serve: {message} (see serve --help)");
            return ExitCode::from(2);
        }
    };

    if let Some(pages) = args.generate {
        let spec = SiteSpec {
            page_bytes: args.page_bytes,
            ..SiteSpec::new(pages)
        };
        let site = generate(&spec);
        if let Err(e) = site.write_to(&args.dir) {
            eprintln!(
                "serve: cannot write the site to {}: {e}",
                args.dir.display()
            );
            return ExitCode::FAILURE;
        }
        println!(
            "wrote {} pages ({} files, {} bytes) to {}",
            site.page_count(),
            site.files.len(),
            site.total_bytes(),
            args.dir.display()
        );
    }

    let files = match StaticDir::new(&args.dir) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("serve: cannot serve {}: {e}", args.dir.display());
            return ExitCode::FAILURE;
        }
    };
    let delay = args.delay;
    let handler = move |req: &Request| {
        let route = files.respond(req);
        if delay.is_zero() {
            route
        } else {
            route.delay(delay)
        }
    };
    let options = ServerOptions {
        addr: SocketAddr::from(([127, 0, 0, 1], args.port)),
        // A server that runs for hours must not keep every request.
        record_requests: false,
    };
    let server = match listen(options.addr)
        .and_then(|listener| TestServer::start_with_listener(listener, handler, options))
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!("serve: cannot listen on 127.0.0.1:{}: {e}", args.port);
            return ExitCode::FAILURE;
        }
    };
    println!(
        "serving {} at {}/ (also http://localhost:{}/); Ctrl-C to stop",
        args.dir.display(),
        server.origin(),
        server.addr().port()
    );

    // The server runs on its own thread; this one only has to stay alive.
    // Ctrl-C ends the process, and the kernel closes every socket.
    loop {
        std::thread::park();
    }
}

/// A socket listening on `addr` with an accept queue of 4,096 connections
/// (the module notes say why), not the standard library's 128.
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    // As the standard library's listener does: a port a crawl just left in
    // TIME_WAIT can be listened on again at once.
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(4096)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Option<Args>, String> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_both_option_spellings() {
        let dir = std::env::temp_dir();
        let dir = dir.to_str().unwrap();
        let a = args(&[dir]).unwrap().unwrap();
        assert_eq!(a.port, 3000);
        assert_eq!(a.generate, None);
        let a = args(&[dir, "--port", "8080"]).unwrap().unwrap();
        assert_eq!(a.port, 8080);
        let a = args(&["--port=0", dir, "--generate=5", "--page-bytes", "100"])
            .unwrap()
            .unwrap();
        assert_eq!((a.port, a.generate, a.page_bytes), (0, Some(5), 100));
        assert_eq!(a.delay, Duration::ZERO);
        let a = args(&[dir, "--delay", "200"]).unwrap().unwrap();
        assert_eq!(a.delay, Duration::from_millis(200));
        assert!(args(&["--help"]).unwrap().is_none());
        assert!(args(&[dir, "-h"]).unwrap().is_none());
    }

    #[test]
    fn bad_arguments_are_one_line_errors() {
        let dir = std::env::temp_dir();
        let dir = dir.to_str().unwrap();
        for bad in [
            &[][..],
            &[dir, "--port"],
            &[dir, "--port", "70000"],
            &[dir, "--port", "x"],
            &[dir, "--generate", "0"],
            &[dir, "--generate", "-3"],
            &[dir, "--page-bytes", "10"],
            &[dir, "--delay", "-1"],
            &[dir, "--delay", "0.5s"],
            &[dir, "--colour"],
            &[dir, "-x"],
            &[dir, dir],
            &["/no/such/folder/anywhere"],
        ] {
            let err = args(bad).unwrap_err();
            assert!(!err.contains('\n'), "{err}");
        }
        // A missing folder is fine when it is about to be generated.
        assert!(args(&["/no/such/folder/anywhere", "--generate", "3"]).is_ok());
    }
}
