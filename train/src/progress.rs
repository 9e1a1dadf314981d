//! The progress bar [`fit`](super::fit) draws for each epoch:
//!
//! ```text
//! epoch 3/10 [==============>               ] 41/90 loss 0.3127 acc 91.20% 5400 samples/s
//! ```
//!
//! Drawn on standard error only when that is a terminal, redrawn at most
//! 20 times a second, cut to the terminal's width (a wrapped line could
//! not be redrawn in place), and cleared when the epoch ends.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Width of the bar between its brackets.
const BAR: usize = 30;
/// Shortest time between two redraws.
const REDRAW: Duration = Duration::from_millis(50);

/// One epoch's bar.
pub(crate) struct Progress {
    shown: bool,
    prefix: String,
    len: usize,
    pos: usize,
    message: String,
    drawn: Option<Instant>,
}

impl Progress {
    /// A bar over `len` batches, labelled `epoch {prefix}`; drawn only
    /// when `shown` and standard error is a terminal.
    pub(crate) fn new(shown: bool, prefix: String, len: usize) -> Self {
        let shown = shown && std::io::stderr().is_terminal();
        Progress { shown, prefix, len, pos: 0, message: String::new(), drawn: None }
    }

    /// Replaces the text after the counts (shown from the next redraw).
    pub(crate) fn set_message(&mut self, message: String) {
        self.message = message;
    }

    /// One more batch done.
    pub(crate) fn inc(&mut self) {
        self.pos += 1;
        if !self.shown || self.drawn.is_some_and(|t| t.elapsed() < REDRAW && self.pos < self.len) {
            return;
        }
        let line = render(&self.prefix, self.pos, self.len, &self.message, terminal_width());
        let mut err = std::io::stderr().lock();
        // A failed write to the terminal loses a frame of the bar, nothing more.
        let _ = write!(err, "\r\x1b[2K{line}").and_then(|()| err.flush());
        self.drawn = Some(Instant::now());
    }

    /// Erases the bar.
    pub(crate) fn finish_and_clear(&mut self) {
        if self.drawn.take().is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K").and_then(|()| err.flush());
        }
    }
}

/// The bar's line, at most `width` characters.
fn render(prefix: &str, pos: usize, len: usize, message: &str, width: usize) -> String {
    let filled = (pos.min(len) * BAR).checked_div(len).unwrap_or(BAR);
    let bar = match filled {
        BAR => "=".repeat(BAR),
        n => format!("{}>{}", "=".repeat(n), " ".repeat(BAR - n - 1)),
    };
    let line = format!("epoch {prefix} [{bar}] {pos}/{len} {message}");
    // Leave the last column free: writing there wraps some terminals.
    line.trim_end().chars().take(width.saturating_sub(1)).collect()
}

/// Columns of the terminal on standard error: `COLUMNS` when set, else
/// what the terminal reports, else 80.
fn terminal_width() -> usize {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).filter(|&n| n > 0) {
        return n;
    }
    #[cfg(unix)]
    {
        // SAFETY: TIOCGWINSZ writes a `winsize` into the struct given.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        // SAFETY: as above; fd 2 is standard error, a terminal when drawn.
        if unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut size) } == 0 && size.ws_col > 0 {
            return usize::from(size.ws_col);
        }
    }
    80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_bar_counts_and_message() {
        let line = render("3/10", 41, 90, "loss 0.3127 5400 samples/s", 200);
        assert_eq!(
            line,
            format!("epoch 3/10 [{}>{}] 41/90 loss 0.3127 5400 samples/s", "=".repeat(13), " ".repeat(16))
        );
        assert_eq!(render("1/1", 0, 4, "", 200), format!("epoch 1/1 [>{}] 0/4", " ".repeat(29)));
        assert_eq!(render("1/1", 4, 4, "", 200), format!("epoch 1/1 [{}] 4/4", "=".repeat(30)));
        // An empty epoch counts as done; a narrow terminal cuts the line.
        assert_eq!(render("1/1", 0, 0, "", 200), format!("epoch 1/1 [{}] 0/0", "=".repeat(30)));
        assert_eq!(render("2/5", 1, 2, "a long message", 20), "epoch 2/5 [========");
    }
}
