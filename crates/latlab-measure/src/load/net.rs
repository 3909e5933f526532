//! `net`: a flood through the loopback interface (Wilshire's ping load, Koolwal's
//! `ping -f localhost`): ICMP echo over a raw socket when permitted, else UDP.

use super::{
    param_size, param_u64, Load, LoadContext, LoadError, LoadInfo, ParamInfo, Params, Work,
};
use latlab_rt::icmp::IcmpSocket;
use std::net::UdpSocket;
use std::time::Duration;

pub(super) struct Net;

/// The net load.
pub(super) const INFO: LoadInfo = LoadInfo {
    name: "net",
    summary: "floods the loopback interface: ICMP echo (a flood ping) when raw sockets are \
         permitted, else UDP datagrams",
    params: &[
        ParamInfo {
            key: "mode",
            choices: &[],
            default: "auto",
            help: "icmp, udp, or auto (icmp when permitted)",
        },
        ParamInfo {
            key: "size",
            choices: &[],
            default: "64",
            help: "payload in bytes",
        },
        ParamInfo {
            key: "senders",
            choices: &[],
            default: "1",
            help: "sending threads",
        },
    ],
    work: Work {
        unit: "packets",
        rate_unit: "packets/s",
        scale: 1.0,
    },
    load: &Net,
};

impl Load for Net {
    fn check(&self, params: &Params, _dir: &std::path::Path) -> Result<(), LoadError> {
        match params.get("mode").map(String::as_str) {
            Some("auto" | "udp" | "icmp") => {}
            other => {
                return Err(LoadError::Spec(format!(
                    "net mode={}: give auto, udp or icmp",
                    other.unwrap_or("")
                )))
            }
        }
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
        let mode = params.get("mode").map(String::as_str).unwrap_or("auto");
        if mode != "udp" {
            match IcmpSocket::open(Duration::from_millis(100)) {
                Ok(socket) => {
                    ctx.note("ICMP echo flood over a raw socket");
                    return icmp_flood(socket, size, senders, ctx);
                }
                Err(e) if mode == "icmp" => {
                    return Err(LoadError::Failed(format!(
                        "net mode=icmp: {e}; run as root or use mode=udp"
                    )))
                }
                Err(_) => ctx.note("raw sockets not permitted: UDP flood instead of ICMP"),
            }
        } else {
            ctx.note("UDP flood");
        }
        udp_flood(size, senders, ctx)
    }
}

fn icmp_flood(
    socket: IcmpSocket,
    size: usize,
    senders: usize,
    ctx: &LoadContext,
) -> Result<(), LoadError> {
    let id = (std::process::id() & 0xffff) as u16;
    let socket = &socket;
    ctx.ready();
    std::thread::scope(|s| {
        for t in 0..senders {
            s.spawn(move || {
                let payload = vec![0x42u8; size];
                let mut seq = (t as u16).wrapping_mul(4099);
                while !ctx.stopped() {
                    let _ = socket.send_echo(id, seq, &payload);
                    seq = seq.wrapping_add(1);
                }
            });
        }
        let mut buffer = vec![0u8; size + 64];
        while !ctx.stopped() {
            if socket.receive_reply(&mut buffer) == Some(id) {
                ctx.count(0, 1);
            }
        }
    });
    Ok(())
}

fn udp_flood(size: usize, senders: usize, ctx: &LoadContext) -> Result<(), LoadError> {
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
