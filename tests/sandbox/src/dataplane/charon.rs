//! One strongSwan IKE daemon (`charon-systemd`) per network namespace, each with its own
//! `strongswan.conf` (`STRONGSWAN_CONF`), VICI socket and log file, and the
//! `swanctl.conf` rendered for it. ESP runs in user space (`kernel-libipsec`, a TUN
//! device) because the kernels of these machines have no XFRM
//! (../shared/notes/real-strongswan.md).

use std::fmt::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;

/// One connection of a daemon: a gateway's peer or a client site's gateway.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnConf {
    pub name: String,
    pub version: u8,
    pub local_addr: String,
    pub remote_addr: String,
    pub local_id: String,
    pub remote_id: String,
    pub proposals: Vec<String>,
    pub rekey_time: String,
    /// `dpd_delay` (`0s`: off).
    pub dpd_delay: String,
    /// The PSK; `None` when the Secret cannot be read (no credential is loaded).
    pub psk: Option<Vec<u8>>,
    pub children: Vec<ChildConf>,
    /// The client side: initiate at load and on every loss.
    pub initiator: bool,
}

/// How a client site behaves (operator-settings fault knobs; not part of its parameter
/// sheet, so a change is applied to a running site).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// It dials at load and again on every loss (DPD, a DELETE from the gateway); off
    /// (`clientPeerNeverReturns`): an IKE SA that is up stays up, one that is down never
    /// comes back unless the gateway initiates.
    pub reinitiates: bool,
    /// It answers the gateway's own initiation; off (`clientRefusesInitiation`): its
    /// charon listens on random ports only, like a client behind NAT, so an IKE_SA_INIT
    /// sent to it meets a closed port.
    pub answers: bool,
    /// It runs DPD (`clientDpdMs`); off (`clientDpdOff`): it never checks its peer, so a
    /// gateway that vanishes without a DELETE is never noticed.
    pub dpd: bool,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            reinitiates: true,
            answers: true,
            dpd: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildConf {
    pub name: String,
    pub local_ts: Vec<String>,
    pub remote_ts: Vec<String>,
    pub esp_proposals: Vec<String>,
    pub rekey_time: String,
}

/// Retransmission and DPD timing of a daemon (`strongswan.conf`).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub retransmit_timeout_s: f64,
    pub retransmit_tries: u32,
}

fn list(v: &[String]) -> String {
    v.join(",")
}

/// The `swanctl.conf` of a daemon (`behaviour` matters for a client site only).
pub fn swanctl_conf(conns: &[ConnConf], behaviour: Behaviour) -> String {
    let mut s = String::from("connections {\n");
    for c in conns {
        let _ = writeln!(s, "  {} {{", c.name);
        let _ = writeln!(s, "    version = {}", c.version);
        let _ = writeln!(s, "    local_addrs = {}", c.local_addr);
        let _ = writeln!(s, "    remote_addrs = {}", c.remote_addr);
        let _ = writeln!(s, "    proposals = {}", list(&c.proposals));
        let _ = writeln!(s, "    rekey_time = {}", c.rekey_time);
        let dpd = if c.initiator && !behaviour.dpd {
            "0s"
        } else {
            &c.dpd_delay
        };
        let _ = writeln!(s, "    dpd_delay = {dpd}");
        if c.initiator && behaviour.reinitiates {
            let _ = writeln!(s, "    keyingtries = 0");
        }
        let _ = writeln!(
            s,
            "    local {{\n      auth = psk\n      id = {}\n    }}",
            c.local_id
        );
        let _ = writeln!(
            s,
            "    remote {{\n      auth = psk\n      id = {}\n    }}",
            c.remote_id
        );
        let _ = writeln!(s, "    children {{");
        for ch in &c.children {
            let _ = writeln!(s, "      {} {{", ch.name);
            let _ = writeln!(s, "        local_ts = {}", list(&ch.local_ts));
            let _ = writeln!(s, "        remote_ts = {}", list(&ch.remote_ts));
            let _ = writeln!(s, "        esp_proposals = {}", list(&ch.esp_proposals));
            let _ = writeln!(s, "        rekey_time = {}", ch.rekey_time);
            // (A trap policy, dialling on traffic, does not work with kernel-libipsec here:
            // its acquires never fire; so the client dials at once and on every loss.)
            if c.initiator && behaviour.reinitiates {
                let _ = writeln!(s, "        start_action = start");
                let _ = writeln!(s, "        dpd_action = restart");
                let _ = writeln!(s, "        close_action = restart");
            } else {
                let _ = writeln!(s, "        dpd_action = clear");
            }
            let _ = writeln!(s, "      }}");
        }
        let _ = writeln!(s, "    }}\n  }}");
    }
    s.push_str("}\nsecrets {\n");
    for c in conns {
        let Some(psk) = &c.psk else { continue };
        let _ = writeln!(s, "  ike-{} {{", c.name);
        let _ = writeln!(s, "    id-local = {}", c.local_id);
        let _ = writeln!(s, "    id-remote = {}", c.remote_id);
        let _ = writeln!(
            s,
            "    secret = 0s{}",
            base64::engine::general_purpose::STANDARD.encode(psk)
        );
        let _ = writeln!(s, "  }}");
    }
    s.push_str("}\n");
    s
}

/// The plugins swanctl itself loads (without this list it tries every plugin Debian does
/// not ship and says so on stderr, which would reach a `kubectl exec`).
pub const SWANCTL_PLUGINS: &str = "random openssl pem pkcs1 pkcs8 x509 pubkey nonce";

/// Run `swanctl ARGS` against the charon at VICI `uri`, reading its `strongswan.conf`
/// (which names the plugins swanctl itself loads): stdout, stderr, exit code.
pub fn swanctl_at(
    uri: &str,
    conf: &Path,
    args: &[impl AsRef<std::ffi::OsStr>],
) -> Result<(String, String, i32), String> {
    let out = Command::new(super::SWANCTL)
        .args(args)
        .args(["--uri", uri])
        .env("STRONGSWAN_CONF", conf)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("swanctl: {e}"))?;
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(1),
    ))
}

/// Write `text` to `path`, readable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A running charon.
pub struct Daemon {
    pub dir: PathBuf,
    pub netns: String,
    child: Child,
}

impl Daemon {
    pub fn vici(&self) -> PathBuf {
        self.dir.join("charon.vici")
    }

    pub fn uri(&self) -> String {
        format!("unix://{}", self.vici().display())
    }

    /// Its `strongswan.conf` (swanctl reads it too).
    pub fn conf(&self) -> PathBuf {
        self.dir.join("strongswan.conf")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.join("charon.log")
    }

    /// Start charon in `netns` with its files in `dir`, and wait (bounded) for its VICI
    /// socket. Started from a long-lived thread: it dies with that thread
    /// (`PR_SET_PDEATHSIG`), so a killed sandbox leaves no daemon behind.
    pub fn start(
        dir: &Path,
        netns: &str,
        timing: Timing,
        behaviour: Behaviour,
    ) -> Result<Daemon, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let vici = dir.join("charon.vici");
        let _ = std::fs::remove_file(&vici);
        let conf = format!(
            "swanctl {{\n  load = {tool}\n}}\ncharon-systemd {{\n  load_modular = yes\n{ports}  retransmit_timeout = {t}\n  retransmit_base = 1.0\n  retransmit_tries = {n}\n  retransmit_jitter = 0\n  plugins {{\n    include /etc/strongswan.d/charon/*.conf\n    vici {{\n      socket = unix://{vici}\n    }}\n    kernel-libipsec {{\n      load = yes\n    }}\n  }}\n  journal {{\n    default = -1\n  }}\n  filelog {{\n    charon {{\n      path = {log}\n      time_format = %Y-%m-%dT%H:%M:%S\n      ike_name = yes\n      flush_line = yes\n      default = 1\n      ike = 1\n      cfg = 1\n    }}\n  }}\n}}\n",
            tool = SWANCTL_PLUGINS,
            ports = if behaviour.answers {
                ""
            } else {
                "  port = 0\n  port_nat_t = 0\n"
            },
            t = timing.retransmit_timeout_s,
            n = timing.retransmit_tries,
            vici = vici.display(),
            log = dir.join("charon.log").display(),
        );
        std::fs::write(dir.join("strongswan.conf"), conf)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, super::CHARON])
            .env("STRONGSWAN_CONF", dir.join("strongswan.conf"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))
                .map_err(std::io::Error::from)?;
                rustix::process::setsid().map_err(std::io::Error::from)?;
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("{} in {netns}: {e}", super::CHARON))?;
        let d = Daemon {
            dir: dir.to_path_buf(),
            netns: netns.into(),
            child,
        };
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if vici.exists() && d.swanctl(&["--stats"]).is_ok_and(|(_, _, c)| c == 0) {
                return Ok(d);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "charon in {netns} did not open {} within 10 s (log: {})",
            vici.display(),
            d.log().display()
        ))
    }

    /// Run `swanctl ARGS --uri <this daemon>`: stdout, stderr, exit code.
    pub fn swanctl(&self, args: &[&str]) -> Result<(String, String, i32), String> {
        swanctl_at(&self.uri(), &self.conf(), args)
    }

    /// Write `swanctl.conf` and load it (credentials and connections; connections no
    /// longer in it are unloaded).
    pub fn load(&self, conf: &str) -> Result<(), String> {
        let file = self.dir.join("swanctl.conf");
        // It holds the PSK: owner-only, like the directory.
        write_private(&file, conf)?;
        let f = file.display().to_string();
        let (out, err, code) = self.swanctl(&["--load-all", "--clear", "--file", &f])?;
        if code != 0 {
            return Err(format!(
                "swanctl --load-all in {}: {}{}",
                self.netns,
                out.trim(),
                err.trim()
            ));
        }
        Ok(())
    }

    /// Stop the daemon (SIGTERM, then SIGKILL after 1 s).
    pub fn stop(mut self) {
        self.halt();
        // The key goes with the daemon; its log stays for reading.
        let _ = std::fs::remove_file(self.dir.join("swanctl.conf"));
    }

    /// Stop it and start it again in the same namespace and directory.
    pub fn restart(&mut self, timing: Timing, behaviour: Behaviour) -> Result<(), String> {
        self.halt();
        *self = Daemon::start(&self.dir.clone(), &self.netns.clone(), timing, behaviour)?;
        Ok(())
    }

    fn halt(&mut self) {
        if let Some(p) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::TERM);
        }
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
