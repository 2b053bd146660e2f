//! Bytes the network delivered to a process: the sum of
//! `tcpi_bytes_received` (RFC 4898's `ThruOctetsReceived`: payload only,
//! the handshake counts nothing) over the TCP sockets it and its children
//! hold (an rsync and the receiver it forks share one; through ssh, the
//! ssh child holds it), read from the kernel through sock_diag netlink,
//! as `ss -ti` does. Not `/proc/PID/io`'s `rchar`, which counts every
//! read: rsync's own reads of its libraries and configuration made a
//! black hole that never sent a byte show `22 KiB received`, and the
//! basis file `--copy-dest` reads a whole principal more.
//!
//! `None` where nothing can be counted: no TCP socket (a local source,
//! or rsync has not connected yet), or a kernel without sock_diag. For a
//! local source, [`read_locally`] tells what rsync has read instead.

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// What the network delivered so far to `pid` and its descendants, over TCP.
pub(crate) fn received(pid: u32) -> Option<u64> {
    let pids = super::proc::with_descendants(pid);
    let inodes: HashSet<u64> = pids.iter().flat_map(|p| super::proc::socket_inodes(*p)).collect();
    if inodes.is_empty() {
        return None;
    }
    let mut total = None;
    for family in [libc::AF_INET, libc::AF_INET6] {
        // A family the kernel will not dump (IPv6 disabled) holds none of ours.
        let Ok(found) = tcp_sockets(family as u8) else { continue };
        for (inode, bytes) in found {
            if inodes.contains(&inode) {
                *total.get_or_insert(0) += bytes;
            }
        }
    }
    total
}

/// What the rsync processes under `pid` have read so far, the most any
/// one of them has (`/proc/PID/io`'s `rchar`: files, pipes and its own
/// libraries alike): for a local source, where no network delivers
/// anything. `None` where `/proc` cannot tell.
pub(crate) fn read_locally(pid: u32) -> Option<u64> {
    let pids = super::proc::with_descendants(pid);
    let is_rsync = |p: &u32| {
        super::proc::cmdline(*p)
            .and_then(|w| w.first().map(|w0| w0.rsplit('/').next().unwrap_or("").starts_with("rsync")))
            .unwrap_or(false)
    };
    pids.iter().filter(|p| is_rsync(p)).filter_map(|p| Some(super::proc::io_bytes(*p)?.0)).max()
}

/// `SOCK_DIAG_BY_FAMILY`.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLM_F_REQUEST | NLM_F_DUMP`.
const DUMP_REQUEST: u16 = 0x1 | 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `INET_DIAG_INFO`: the attribute holding `struct tcp_info`.
const INET_DIAG_INFO: u16 = 2;
/// Where `tcpi_bytes_received` sits in `struct tcp_info` (Linux 4.1+).
const BYTES_RECEIVED_AT: usize = 128;
/// `struct nlmsghdr` and `struct inet_diag_msg`.
const NLMSG_HDR: usize = 16;
const DIAG_MSG: usize = 72;
/// `idiag_inode` in `struct inet_diag_msg`.
const INODE_AT: usize = 68;

/// Every TCP socket of `family` in this network namespace: (inode, bytes received).
fn tcp_sockets(family: u8) -> io::Result<Vec<(u64, u64)>> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned
    // by the OwnedFd at once (closed on every path).
    let fd = unsafe {
        let fd = libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 4 /* NETLINK_SOCK_DIAG */);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        OwnedFd::from_raw_fd(fd)
    };
    let timeout = libc::timeval { tv_sec: 1, tv_usec: 0 };
    // SAFETY: the option value is a timeval of the size given, alive for the call.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const timeout).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    let req = request(family);
    // SAFETY: send(2) reads `req.len()` bytes of `req`, which lives for the
    // call; without an address a netlink message goes to the kernel.
    if unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: recv(2) writes at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 || parse(&buf[..n as usize], &mut out)? {
            return Ok(out);
        }
    }
}

/// A dump request for every TCP socket of `family`, with `tcp_info`.
fn request(family: u8) -> Vec<u8> {
    let mut r = Vec::with_capacity(NLMSG_HDR + 56);
    r.extend_from_slice(&((NLMSG_HDR + 56) as u32).to_ne_bytes());
    r.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    r.extend_from_slice(&DUMP_REQUEST.to_ne_bytes());
    r.extend_from_slice(&1u32.to_ne_bytes()); // seq
    r.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel fills it in
                                              // struct inet_diag_req_v2: family, IPPROTO_TCP, the extension bit of
                                              // INET_DIAG_INFO, padding, every state, an empty socket id.
    r.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, 1 << (INET_DIAG_INFO - 1), 0]);
    r.extend_from_slice(&u32::MAX.to_ne_bytes());
    r.extend_from_slice(&[0u8; 48]);
    r
}

/// Add the sockets of one datagram of the dump to `out`; true when the
/// dump is over.
fn parse(mut data: &[u8], out: &mut Vec<(u64, u64)>) -> io::Result<bool> {
    let u16_at = |b: &[u8], i: usize| b.get(i..i + 2).map(|s| u16::from_ne_bytes([s[0], s[1]]));
    let u32_at = |b: &[u8], i: usize| b.get(i..i + 4).map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]));
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "a sock_diag message cut short");
    while data.len() >= NLMSG_HDR {
        let len = u32_at(data, 0).ok_or_else(bad)? as usize;
        let kind = u16_at(data, 4).ok_or_else(bad)?;
        if len < NLMSG_HDR || len > data.len() {
            return Err(bad());
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => return Err(io::Error::other("sock_diag refused the dump")),
            _ => {}
        }
        let msg = &data[NLMSG_HDR..len];
        if msg.len() >= DIAG_MSG {
            let inode = u64::from(u32_at(msg, INODE_AT).ok_or_else(bad)?);
            let mut attrs = &msg[DIAG_MSG..];
            while attrs.len() >= 4 {
                let alen = usize::from(u16_at(attrs, 0).ok_or_else(bad)?);
                let atype = u16_at(attrs, 2).ok_or_else(bad)?;
                if alen < 4 || alen > attrs.len() {
                    break;
                }
                let value = &attrs[4..alen];
                if atype == INET_DIAG_INFO {
                    if let Some(b) = value.get(BYTES_RECEIVED_AT..BYTES_RECEIVED_AT + 8) {
                        out.push((inode, u64::from_ne_bytes(b.try_into().expect("8 bytes"))));
                    }
                }
                attrs = &attrs[((alen + 3) & !3).min(attrs.len())..];
            }
        }
        data = &data[((len + 3) & !3).min(data.len())..];
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A real loopback connection: what arrived is counted exactly, and
    /// a socket that received nothing counts 0.
    #[test]
    fn counts_what_a_tcp_socket_received() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let inode_of = |fd: i32| -> u64 {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
            link.to_str().unwrap().trim_start_matches("socket:[").trim_end_matches(']').parse().unwrap()
        };
        let client_inode = inode_of(client.as_raw_fd());
        let bytes = |inode: u64| tcp_sockets(libc::AF_INET as u8).unwrap().into_iter().find(|(i, _)| *i == inode);
        assert_eq!(bytes(client_inode).map(|(_, b)| b), Some(0), "connected, nothing received");
        server.write_all(&[7u8; 12345]).unwrap();
        let mut got = vec![0u8; 12345];
        client.read_exact(&mut got).unwrap();
        assert_eq!(bytes(client_inode).map(|(_, b)| b), Some(12345));
        assert!(received(std::process::id()).is_some_and(|b| b >= 12345), "this process holds it");
    }
}
