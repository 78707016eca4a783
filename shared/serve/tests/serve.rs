//! `serve` as a learner runs it: it writes a generated site, says where it
//! serves it, and answers a request for its first page.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The server process, killed when the test ends, pass or fail.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_generated_site_is_served_on_the_port_it_names() {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let site = dir.path().join("site");
    let mut child = Command::new(env!("CARGO_BIN_EXE_serve"))
        .arg(&site)
        .args(["--generate", "20", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start serve");
    let stdout = child.stdout.take().expect("serve's stdout");
    let _serve = Serve(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut said = Vec::new();
    let origin = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| {
                panic!("serve ended without a `serving ... at URL/` line; it said: {said:?}")
            })
            .expect("read serve's stdout");
        if let Some(rest) = line.strip_prefix("serving ") {
            let url = rest
                .split(" at ")
                .nth(1)
                .and_then(|r| r.split('/').nth(2))
                .unwrap_or_else(|| panic!("no address in serve's line {line:?}"))
                .to_string();
            break url;
        }
        said.push(line);
    };
    let mut stream = TcpStream::connect(&origin).expect("connect to the address serve named");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    stream
        .write_all(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .expect("send a request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    assert!(
        answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
        "the generated site's first page should answer 200 OK; serve answered: {:?}",
        answer.lines().next()
    );
    assert!(
        answer.contains("href="),
        "the generated first page should link to other pages; it was: {answer:.300}"
    );
}
