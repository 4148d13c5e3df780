//! Network namespaces and links through iproute2 (`ip`), and running a thread inside a
//! namespace (`setns(2)` moves only the calling thread; sockets it opens stay in that
//! namespace).

use std::os::fd::AsFd;
use std::process::Command;

/// Run `ip ARGS`; an error names the command and what it printed.
pub fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `ip -n NS ARGS`.
pub fn ip_in(ns: &str, args: &[&str]) -> Result<(), String> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    ip(&all)
}

/// The network namespaces `ip netns list` names.
pub fn list() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Kill every process in `ns` and delete it.
pub fn remove(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Some(p) = pid
                .parse::<i32>()
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
    }
    let _ = ip(&["netns", "del", ns]);
}

/// Move the calling thread into network namespace `ns`.
pub fn enter(ns: &str) -> Result<(), String> {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}"))
        .map_err(|e| format!("network namespace {ns}: {e}"))?;
    rustix::thread::move_into_link_name_space(
        f.as_fd(),
        Some(rustix::thread::LinkNameSpaceType::Network),
    )
    .map_err(|e| format!("setns into {ns}: {e}"))
}

/// Run `f` on a thread inside `ns` and wait for its result.
pub fn run_in<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let ns = ns.to_string();
    std::thread::spawn(move || {
        enter(&ns)?;
        Ok(f())
    })
    .join()
    .map_err(|_| "a thread in the namespace panicked".to_string())?
}

/// Whether this machine can build the real data plane: root, `ip`, strongSwan's
/// `charon-systemd` and `swanctl`, its gcm and kernel-libipsec plugins, and `/dev/net/tun`
/// for kernel-libipsec. `Err` says
/// what is missing.
pub fn available() -> Result<(), String> {
    let mut missing = Vec::new();
    if !rustix::process::geteuid().is_root() {
        missing.push("root (network namespaces)".to_string());
    }
    for (what, path) in [
        (
            "charon-systemd (apt-get install charon-systemd)",
            super::CHARON,
        ),
        (
            "swanctl (apt-get install strongswan-swanctl)",
            super::SWANCTL,
        ),
        ("/dev/net/tun (kernel-libipsec)", "/dev/net/tun"),
        // Debian's plugin directory. Without gcm, charon negotiates the IKE SA and then
        // refuses every AES_GCM_16 CHILD SA ("unsupported AEAD algorithm"): no tunnel.
        (
            "strongSwan's gcm plugin (apt-get install libstrongswan-standard-plugins)",
            "/usr/lib/ipsec/plugins/libstrongswan-gcm.so",
        ),
        (
            "strongSwan's kernel-libipsec plugin (apt-get install libcharon-extra-plugins)",
            "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so",
        ),
    ] {
        if !std::path::Path::new(path).exists() {
            missing.push(what.to_string());
        }
    }
    if Command::new("ip").arg("-V").output().is_err() {
        missing.push("ip (apt-get install iproute2)".into());
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing: {}", missing.join(", ")))
    }
}
