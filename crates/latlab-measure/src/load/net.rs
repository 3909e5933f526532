//! `net`: a loopback UDP flood (Wilshire's ping load, Koolwal's `ping -f localhost`),
//! without needing raw sockets.

use super::{param_size, param_u64, Load, LoadContext, LoadError, Param, Params, Work};
use std::net::UdpSocket;
use std::time::Duration;

pub(super) struct Net;

impl Load for Net {
    fn name(&self) -> &'static str {
        "net"
    }

    fn describe(&self) -> &'static str {
        "floods UDP datagrams through the loopback interface (a flood ping without raw sockets)"
    }

    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "size",
                default: "64",
                meaning: "datagram payload in bytes",
            },
            Param {
                name: "senders",
                default: "1",
                meaning: "sending threads",
            },
        ]
    }

    fn work(&self) -> Work {
        Work {
            unit: "datagrams",
            rate_unit: "datagrams/s",
            scale: 1.0,
        }
    }

    fn check(&self, params: &Params, _dir: &std::path::Path) -> Result<(), LoadError> {
        match (param_size(params, "size")?, param_u64(params, "senders")?) {
            (1..=65_000, 1..=64) => Ok(()),
            _ => Err(LoadError::Spec(
                "net: size 1 to 65000 bytes, senders 1 to 64".into(),
            )),
        }
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let size = param_size(params, "size")? as usize;
        let senders = param_u64(params, "senders")? as usize;
        let failed = |e: std::io::Error| LoadError::Failed(format!("net load: {e}"));
        let receiver = UdpSocket::bind("127.0.0.1:0").map_err(failed)?;
        receiver
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(failed)?;
        let target = receiver.local_addr().map_err(failed)?;
        ctx.ready();
        std::thread::scope(|s| {
            for _ in 0..senders {
                s.spawn(move || {
                    let Ok(socket) = UdpSocket::bind("127.0.0.1:0") else {
                        return;
                    };
                    let payload = vec![0x42u8; size];
                    while !ctx.stopped() {
                        // A full receive queue drops datagrams; only received ones count.
                        let _ = socket.send_to(&payload, target);
                    }
                });
            }
            let mut buffer = vec![0u8; size.max(1)];
            while !ctx.stopped() {
                if receiver.recv(&mut buffer).is_ok() {
                    ctx.count(0, 1);
                }
            }
        });
        Ok(())
    }
}
