//! What the client sees: a TCP listener on each exposure's virtual IP inside a gateway's
//! namespace that says who answered, and a prober per client site that dials each
//! exposure through the tunnel every 100 ms and appends one JSON line per attempt to
//! `dataplane/probe.jsonl`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

/// How often a site dials each exposure.
pub const INTERVAL: Duration = Duration::from_millis(100);
/// How long one attempt may take (connect, then the answer).
pub const ATTEMPT: Duration = Duration::from_millis(300);

/// A background thread that ends when its flag is set (or when dropped).
pub struct Worker {
    stop: Arc<AtomicBool>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Listen on `addr` inside `netns` and answer every connection with `answer` and a
/// newline. The socket is bound before this returns.
pub fn listen(netns: &str, addr: SocketAddr, answer: String) -> Result<Worker, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let ns = netns.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let bound = super::netns::enter(&ns).and_then(|()| {
            let l =
                TcpListener::bind(addr).map_err(|e| format!("listen on {addr} in {ns}: {e}"))?;
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
            Ok(l)
        });
        let l = match bound {
            Ok(l) => {
                let _ = tx.send(Ok(()));
                l
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        while !flag.load(Ordering::SeqCst) {
            match l.accept() {
                Ok((mut s, _)) => {
                    let _ = s.set_nonblocking(false);
                    let _ = s.write_all(format!("{answer}\n").as_bytes());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(5))
        .map_err(|_| format!("listener on {addr} in {netns} did not start"))??;
    Ok(Worker { stop })
}

/// One exposure a site dials.
#[derive(Clone, Debug)]
pub struct Target {
    pub exposure: String,
    pub addr: SocketAddr,
}

/// The probe log, shared by every site.
#[derive(Clone)]
pub struct Log {
    file: Arc<Mutex<std::fs::File>>,
    pub path: PathBuf,
}

impl Log {
    pub fn open(path: PathBuf) -> Result<Log, String> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Log {
            file: Arc::new(Mutex::new(file)),
            path,
        })
    }

    fn write(&self, line: &serde_json::Value) {
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(f, "{line}");
    }
}

/// One attempt: connect and read the answer line.
fn attempt(addr: SocketAddr) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, ATTEMPT).ok()?;
    s.set_read_timeout(Some(ATTEMPT)).ok()?;
    let mut buf = [0u8; 256];
    let mut got = Vec::new();
    while !got.contains(&b'\n') && got.len() < buf.len() {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
    let text = String::from_utf8_lossy(&got).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Dial every target from inside `netns` every [`INTERVAL`], logging each attempt.
pub fn prober(netns: &str, site: String, targets: Vec<Target>, log: Log) -> Worker {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let ns = netns.to_string();
    std::thread::spawn(move || {
        if super::netns::enter(&ns).is_err() {
            return;
        }
        while !flag.load(Ordering::SeqCst) {
            let started = std::time::Instant::now();
            for t in &targets {
                let t0 = jiff::Timestamp::now();
                let answer = attempt(t.addr);
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                log.write(&json!({
                    "t": format!("{t0:.3}"),
                    "site": site,
                    "exposure": t.exposure,
                    "ok": answer.is_some(),
                    "answeredBy": answer,
                }));
            }
            if let Some(rest) = INTERVAL.checked_sub(started.elapsed()) {
                std::thread::sleep(rest);
            }
        }
    });
    Worker { stop }
}
