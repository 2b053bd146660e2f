//! One module per subcommand, each the command's entry point
//! `run(&Options, &Ctx) -> Result<Exit>`, which prints the command's
//! results on [`Ctx::out`]. Most define their `Options` here; `watch`
//! re-exports the origin daemon's (`crate::origin::watch`) and `rmirror`
//! the engine's (`crate::mirror::looping`). The binary converts its
//! arguments into these structs; nothing here parses argv.

use crate::origin::Writer;
use crate::sys::clock::Clock;
use std::cell::{RefCell, RefMut};
use std::io::Write;

pub use crate::exit::{exit_for_error, is_closed, Exit};

/// What every command gets besides its own options: the settings of the
/// global flags and the stream its results go to. Commands print their
/// results here (log lines go to stderr through [`crate::output::log`]).
pub struct Ctx<'a> {
    /// Who writes and when: the clock (`--now`), `$0` for `Producers`,
    /// the lock timeout (`--locktimeout`).
    pub writer: Writer,
    /// Progress bars may be drawn (decided once: [`crate::output::progress::enabled`]).
    pub progress: bool,
    /// `-v`: listings show more (overview's extra columns).
    pub verbose: bool,
    out: RefCell<&'a mut dyn Write>,
}

impl<'a> Ctx<'a> {
    /// The context of one command: results go to `out`.
    pub fn new(writer: Writer, progress: bool, verbose: bool, out: &'a mut dyn Write) -> Ctx<'a> {
        Ctx { writer, progress, verbose, out: RefCell::new(out) }
    }

    /// The one clock (`--now` pins it), as the writer has it.
    pub fn clock(&self) -> &Clock {
        &self.writer.clock
    }

    /// Where results go (stdout, buffered). One borrow at a time: a
    /// command takes it once and hands `&mut **out` to its helpers.
    pub fn out(&self) -> RefMut<'_, &'a mut dyn Write> {
        self.out.borrow_mut()
    }
}

pub mod aggregate;
pub mod beacon;
pub mod check;
pub mod fsck;
pub mod init;
pub mod news;
pub mod overview;
pub mod probe;
pub mod rmirror;
pub mod status;
pub mod trigger;
pub mod update;
pub mod watch;
