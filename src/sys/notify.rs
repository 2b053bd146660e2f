//! systemd's readiness protocol (`sd_notify`), for `Type=notify` units:
//! a datagram to the socket named by `NOTIFY_SOCKET`, nothing when it is
//! unset. `rmirror` says READY as soon as its loop runs (before any
//! upstream answered: a first start against an unreachable one must not
//! hit the unit's start timeout) and STATUS after each pass (`systemctl
//! status` then shows the last pass, or failure, and its tree) and
//! STOPPING on the way out; `watch` says READY once every directory is
//! watched.

use std::os::unix::net::UnixDatagram;

/// Send `state` (e.g. `READY=1`, `STATUS=…`); errors are ignored (the
/// supervisor is not ours to fail on).
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return };
    let Ok(sock) = UnixDatagram::unbound() else { return };
    let bytes = path.as_encoded_bytes();
    let sent = match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name)
                .and_then(|a| sock.send_to_addr(state.as_bytes(), &a))
        }
        None => sock.send_to(state.as_bytes(), std::path::Path::new(&path)),
    };
    if let Err(e) = sent {
        tracing::debug!("cannot notify systemd ({state}): {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_to_the_socket_named_in_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let server = UnixDatagram::bind(&path).unwrap();
        std::env::set_var("NOTIFY_SOCKET", &path);
        notify("READY=1");
        std::env::remove_var("NOTIFY_SOCKET");
        let mut buf = [0u8; 64];
        let n = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        notify("READY=1"); // unset: nothing, no error
    }
}
