//! `launch`: a fork/exec storm of a trivial program that prints (Realfeel's launch load).

use super::{Load, LoadContext, LoadError, Param, Params, Work};
use std::process::{Command, Stdio};

pub(super) struct Launch;

impl Load for Launch {
    fn name(&self) -> &'static str {
        "launch"
    }

    fn describe(&self) -> &'static str {
        "starts a trivial program that prints, one after another (Realfeel's launch load)"
    }

    fn params(&self) -> &'static [Param] {
        &[Param {
            name: "program",
            default: "echo",
            meaning: "program to launch, found on PATH, run with one argument",
        }]
    }

    fn work(&self) -> Work {
        Work {
            unit: "execs",
            rate_unit: "execs/s",
            scale: 1.0,
        }
    }

    fn run(&self, params: &Params, ctx: &LoadContext) -> Result<(), LoadError> {
        let program = params.get("program").map(String::as_str).unwrap_or("echo");
        let launch = || {
            Command::new(program)
                .arg("latlab launch load")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
        };
        launch().map_err(|e| LoadError::Failed(format!("cannot run {program}: {e}")))?;
        ctx.ready();
        while !ctx.stopped() {
            if launch().is_ok() {
                ctx.count(0, 1);
            }
        }
        Ok(())
    }
}
