//! ICMP echo over a raw socket: the flood ping of the seeds' network loads
//! (`ping -f localhost`), for when raw sockets are permitted (CAP_NET_RAW).

use crate::RtError;
use std::time::Duration;

/// A raw ICMP socket sending echo requests to 127.0.0.1.
#[derive(Debug)]
pub struct IcmpSocket {
    fd: i32,
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in data.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl IcmpSocket {
    /// Opens the socket; fails with EPERM without CAP_NET_RAW.
    pub fn open(receive_timeout: Duration) -> Result<IcmpSocket, RtError> {
        // SAFETY: socket() takes integers only and returns a new descriptor or -1.
        let fd = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::IPPROTO_ICMP,
            )
        };
        if fd < 0 {
            return Err(RtError::last("open a raw ICMP socket"));
        }
        let socket = IcmpSocket { fd };
        let tv = libc::timeval {
            tv_sec: receive_timeout.as_secs() as libc::time_t,
            tv_usec: receive_timeout.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: setsockopt on our socket with a valid timeval of the stated size.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const libc::timeval as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(RtError::last("set the ICMP socket's receive timeout"));
        }
        Ok(socket)
    }

    /// Sends one echo request with `id`, `seq` and `payload` to 127.0.0.1.
    pub fn send_echo(&self, id: u16, seq: u16, payload: &[u8]) -> Result<(), RtError> {
        let mut packet = Vec::with_capacity(8 + payload.len());
        packet.extend_from_slice(&[8, 0, 0, 0]); // echo request, code 0, checksum later
        packet.extend_from_slice(&id.to_be_bytes());
        packet.extend_from_slice(&seq.to_be_bytes());
        packet.extend_from_slice(payload);
        let sum = checksum(&packet);
        packet[2..4].copy_from_slice(&sum.to_be_bytes());
        let to = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: sendto from a valid buffer to a valid sockaddr_in of the stated size.
        let rc = unsafe {
            libc::sendto(
                self.fd,
                packet.as_ptr() as *const libc::c_void,
                packet.len(),
                0,
                &to as *const libc::sockaddr_in as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(RtError::last("send an ICMP echo request"));
        }
        Ok(())
    }

    /// Receives one packet; returns `Some(id)` for an echo reply, `None` for anything
    /// else (including a timeout).
    pub fn receive_reply(&self, buffer: &mut [u8]) -> Option<u16> {
        // SAFETY: recv into a valid, writable buffer of the stated length.
        let n = unsafe {
            libc::recv(
                self.fd,
                buffer.as_mut_ptr() as *mut libc::c_void,
                buffer.len(),
                0,
            )
        };
        if n < 20 {
            return None;
        }
        let header = usize::from(buffer[0] & 0x0f) * 4; // the IP header comes first
        let icmp = buffer.get(header..n as usize)?;
        (icmp.len() >= 8 && icmp[0] == 0).then(|| u16::from_be_bytes([icmp[4], icmp[5]]))
    }
}

impl Drop for IcmpSocket {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor we own, once.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2, checksum 220d.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
        // A packet with its checksum filled in sums to zero.
        let mut p = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'h', b'i', b'!'];
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&p), 0);
    }
}
