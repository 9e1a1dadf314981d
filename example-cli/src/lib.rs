//! The command lines of Blaze's examples: `--name VALUE` (or
//! `--name=VALUE`) options with defaults, `--name` switches, and
//! `-h`/`--help`.
//!
//! An example declares its options one call at a time, each returning
//! the value given or the default, then calls [`Cli::finish`]:
//!
//! ```no_run
//! use blaze_example_cli::Cli;
//!
//! let mut cli = Cli::new("Trains a small model.");
//! let epochs = cli.value("epochs", "Epochs to train.", 15usize);
//! let resume = cli.flag("resume", "Continue from the checkpoint.");
//! cli.finish();
//! ```
//!
//! `finish` prints the help and exits when asked to, and otherwise
//! refuses what it could not use, naming the option: an unknown option,
//! one given twice, a missing or malformed value, a stray argument. It
//! exits with status 2 then, as command-line tools do.
//!
//! The parser is a crate of its own, and generic only in one `FromStr`
//! call per value type, so that it is compiled once: an example's release
//! rebuild after an edit then compiles the example alone. (A derive-based
//! parser generates its code inside each example; that was a fifth of the
//! main example's rebuild.)

use std::fmt::Display;
use std::path::PathBuf;
use std::str::FromStr;

/// One `--name` as given, with the values that followed it.
#[derive(Debug)]
struct Given {
    name: String,
    /// From `--name=VALUE`.
    inline: Option<String>,
    /// The arguments after it that do not start with `--`.
    after: Vec<String>,
    claimed: bool,
}

/// The command line being read, and what was declared of it.
#[derive(Debug)]
pub struct Cli {
    program: String,
    about: &'static str,
    given: Vec<Given>,
    help: bool,
    /// `(usage, description)` per declared option, for `--help`.
    options: Vec<(String, String)>,
    errors: Vec<String>,
}

/// What the command line asks for once every option is declared.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Run, with the values the declarations returned.
    Run,
    /// Print this help and exit successfully.
    Help(String),
    /// Print this error and exit with status 2.
    Error(String),
}

impl Cli {
    /// This process's command line; `about` heads the help.
    pub fn new(about: &'static str) -> Self {
        let mut args = std::env::args_os();
        let program = args
            .next()
            .map(PathBuf::from)
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "example".into());
        let mut errors = Vec::new();
        let args = args
            .filter_map(|a| a.into_string().map_err(|a| errors.push(format!("argument {a:?} is not valid UTF-8"))).ok())
            .collect::<Vec<_>>();
        let mut cli = Self::from_args(&program, about, args);
        cli.errors.splice(0..0, errors);
        cli
    }

    /// A command line of `args` (without the program's name).
    pub fn from_args(program: &str, about: &'static str, args: impl IntoIterator<Item = String>) -> Self {
        let mut cli = Self {
            program: program.to_owned(),
            about,
            given: Vec::new(),
            help: false,
            options: Vec::new(),
            errors: Vec::new(),
        };
        for arg in args {
            if arg == "-h" || arg == "--help" {
                cli.help = true;
            } else if let Some(option) = arg.strip_prefix("--").filter(|o| !o.is_empty()) {
                let (name, inline) = match option.split_once('=') {
                    Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                    None => (option.to_owned(), None),
                };
                cli.given.push(Given { name, inline, after: Vec::new(), claimed: false });
            } else if let Some(last) = cli.given.last_mut() {
                last.after.push(arg);
            } else {
                cli.errors.push(format!("unexpected argument '{arg}' (options start with --)"));
            }
        }
        cli
    }

    /// A switch: whether `--name` was given.
    pub fn flag(&mut self, name: &str, help: &str) -> bool {
        self.declare(format!("--{name}"), help.to_owned());
        let Some(given) = self.claim(name) else { return false };
        if let Some(value) = given.inline {
            self.errors.push(format!("--{name} takes no value, got '{value}'"));
        }
        self.stray(given.after);
        true
    }

    /// `--name VALUE`, or `default` when not given.
    pub fn value<T: FromStr + Display>(&mut self, name: &str, help: &str, default: T) -> T
    where
        T::Err: Display,
    {
        let text = self.text(name, help, Some(&default));
        text.and_then(|t| self.parsed(name, &t)).unwrap_or(default)
    }

    /// `--name VALUE` for a count that must be at least 1.
    pub fn count(&mut self, name: &str, help: &str, default: usize) -> usize {
        let n = self.value(name, help, default);
        if n == 0 {
            self.errors.push(format!("--{name} must be at least 1, got 0"));
        }
        n
    }

    /// `--name PATH`, or `default` when not given.
    pub fn path(&mut self, name: &str, help: &str, default: impl Into<PathBuf>) -> PathBuf {
        let default = default.into();
        self.text(name, help, Some(&default.display())).map_or(default, PathBuf::from)
    }

    /// `--name VALUE`, or `None` when not given.
    pub fn optional<T: FromStr>(&mut self, name: &str, help: &str) -> Option<T>
    where
        T::Err: Display,
    {
        let text = self.text(name, help, None);
        text.and_then(|t| self.parsed(name, &t))
    }

    /// `--name` with one of `choices`, each `(value, what it means,
    /// result)`; the first is the default.
    pub fn choice<T: Copy>(&mut self, name: &str, help: &str, choices: &[(&str, &str, T)]) -> T {
        let named: Vec<(&str, &str)> = choices.iter().map(|c| (c.0, c.1)).collect();
        choices[self.choose(name, help, &named)].2
    }

    /// What the command line asks for, once every option is declared.
    pub fn outcome(mut self) -> Outcome {
        if self.help {
            return Outcome::Help(self.help_text());
        }
        for given in self.given.iter().filter(|g| !g.claimed) {
            self.errors.push(format!("unknown option --{}", given.name));
        }
        match self.errors.first() {
            Some(error) => Outcome::Error(format!("error: {error}\n\nFor the options, run with --help.")),
            None => Outcome::Run,
        }
    }

    /// Prints the help and exits, or prints the first error and exits
    /// with status 2, or returns to run.
    pub fn finish(self) {
        match self.outcome() {
            Outcome::Run => {}
            Outcome::Help(text) => {
                print!("{text}");
                std::process::exit(0);
            }
            Outcome::Error(text) => {
                eprintln!("{text}");
                std::process::exit(2);
            }
        }
    }

    fn help_text(&self) -> String {
        let width = self.options.iter().map(|o| o.0.len()).max().unwrap_or(0).max("-h, --help".len());
        let mut text = format!("{}\n\nUsage: {} [OPTIONS]\n\nOptions:\n", self.about, self.program);
        for (usage, help) in
            self.options.iter().map(|(u, h)| (u.as_str(), h.as_str())).chain([("-h, --help", "Print this help.")])
        {
            let mut lines = help.lines();
            text.push_str(&format!("  {usage:width$}  {}\n", lines.next().unwrap_or("")));
            for line in lines {
                text.push_str(&format!("  {:width$}  {line}\n", ""));
            }
        }
        text
    }

    /// Declares `--name` with `choices`, `(value, what it means)`, and
    /// returns the index of the one given (the first by default).
    fn choose(&mut self, name: &str, help: &str, choices: &[(&str, &str)]) -> usize {
        let names: Vec<&str> = choices.iter().map(|c| c.0).collect();
        let mut help = format!("{help} [default: {}]", names[0]);
        for (value, meaning) in choices {
            help.push_str(&format!("\n    {value}: {meaning}"));
        }
        self.declare(format!("--{name} <{}>", names.join("|")), help);
        self.one_value(name).map_or(0, |text| {
            names.iter().position(|n| *n == text).unwrap_or_else(|| {
                self.errors.push(format!("--{name}: '{text}' is not one of {}", names.join(", ")));
                0
            })
        })
    }

    fn declare(&mut self, usage: String, help: String) {
        self.options.push((usage, help));
    }

    /// Declares `--name VALUE` and returns its text if given.
    fn text(&mut self, name: &str, help: &str, default: Option<&dyn Display>) -> Option<String> {
        let help = match default {
            Some(d) => format!("{help} [default: {d}]"),
            None => help.to_owned(),
        };
        self.declare(format!("--{name} <{}>", name.to_uppercase().replace('-', "_")), help);
        self.one_value(name)
    }

    /// The single value given to `--name`, if it was given.
    fn one_value(&mut self, name: &str) -> Option<String> {
        let given = self.claim(name)?;
        let mut values = given.inline.into_iter().chain(given.after);
        let value = values.next();
        self.stray(values.collect());
        if value.is_none() {
            self.errors.push(format!("--{name} needs a value"));
        }
        value
    }

    fn parsed<T: FromStr>(&mut self, name: &str, text: &str) -> Option<T>
    where
        T::Err: Display,
    {
        text.parse().map_err(|e| self.errors.push(format!("--{name} '{text}': {e}"))).ok()
    }

    /// Marks `--name` as used and returns it; an error if it was given
    /// more than once.
    fn claim(&mut self, name: &str) -> Option<Given> {
        let mut found = self.given.iter_mut().filter(|g| g.name == name);
        let first = found.next()?;
        first.claimed = true;
        let given = Given {
            name: first.name.clone(),
            inline: first.inline.take(),
            after: std::mem::take(&mut first.after),
            claimed: true,
        };
        let twice = found.map(|g| g.claimed = true).count() > 0;
        if twice {
            self.errors.push(format!("--{name} was given more than once"));
        }
        Some(given)
    }

    fn stray(&mut self, values: Vec<String>) {
        if let Some(value) = values.first() {
            self.errors.push(format!("unexpected argument '{value}'"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Model {
        Cnn,
        Mlp,
    }

    /// A small example's epochs, batch size, learning rate, output
    /// folder, resume switch, log folder and model.
    type Values = (usize, usize, f64, PathBuf, bool, Option<PathBuf>, Model);

    /// The options of a small example, read from `args`.
    fn parse(args: &[&str]) -> (Values, Outcome) {
        let mut cli = Cli::from_args("demo", "Trains a demo.", args.iter().map(|a| a.to_string()));
        let values = (
            cli.value("epochs", "Epochs to train.", 15),
            cli.count("batch-size", "Samples per step.", 64),
            cli.value("lr", "Learning rate.", 0.05),
            cli.path("out", "Output folder.", "out/demo"),
            cli.flag("resume", "Continue."),
            cli.optional("tensorboard", "Log folder."),
            cli.choice(
                "model",
                "The model.",
                &[("cnn", "convolutions", Model::Cnn), ("mlp", "dense layers", Model::Mlp)],
            ),
        );
        (values, cli.outcome())
    }

    fn error(args: &[&str]) -> String {
        match parse(args).1 {
            Outcome::Error(e) => e,
            other => panic!("{args:?}: expected an error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_when_nothing_is_given() {
        let (values, outcome) = parse(&[]);
        assert_eq!(outcome, Outcome::Run);
        assert_eq!(values, (15, 64, 0.05, PathBuf::from("out/demo"), false, None, Model::Cnn));
    }

    #[test]
    fn reads_every_kind_in_any_order_and_both_spellings() {
        let (values, outcome) = parse(&[
            "--model=mlp",
            "--resume",
            "--lr",
            "-0.5",
            "--epochs=3",
            "--tensorboard",
            "runs/a",
            "--batch-size",
            "8",
            "--out",
            "x y",
        ]);
        assert_eq!(outcome, Outcome::Run);
        assert_eq!(values, (3, 8, -0.5, PathBuf::from("x y"), true, Some(PathBuf::from("runs/a")), Model::Mlp));
    }

    #[test]
    fn help_lists_every_option_with_its_default() {
        let Outcome::Help(text) = parse(&["--epochs", "nonsense", "-h"]).1 else { panic!("no help") };
        assert!(text.starts_with("Trains a demo.\n\nUsage: demo [OPTIONS]\n"), "{text}");
        for line in [
            "--epochs <EPOCHS>",
            "Epochs to train. [default: 15]",
            "--batch-size <BATCH_SIZE>",
            "[default: out/demo]",
            "--resume ",
            "--model <cnn|mlp>",
            "mlp: dense layers",
            "-h, --help",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
        assert!(matches!(parse(&["--help"]).1, Outcome::Help(_)));
    }

    #[test]
    fn refuses_bad_input_naming_the_option() {
        for (args, message) in [
            (&["--epochs", "x"][..], "--epochs 'x': invalid digit"),
            (&["--lr"], "--lr needs a value"),
            (&["--lr", "--resume"], "--lr needs a value"),
            (&["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
            (&["--model", "rnn"], "--model: 'rnn' is not one of cnn, mlp"),
            (&["--resume=yes"], "--resume takes no value, got 'yes'"),
            (&["--resume", "now"], "unexpected argument 'now'"),
            (&["--epochs", "3", "4"], "unexpected argument '4'"),
            (&["data"], "unexpected argument 'data' (options start with --)"),
            (&["--epochs", "3", "--epochs", "4"], "--epochs was given more than once"),
            (&["--epoch", "3"], "unknown option --epoch"),
            (&["--"], "unexpected argument '--'"),
        ] {
            let e = error(args);
            assert!(e.starts_with("error: ") && e.contains(message), "{args:?}: {e}");
            assert!(e.ends_with("For the options, run with --help."), "{e}");
        }
    }
}
