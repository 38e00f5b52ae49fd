//! Where log lines go: a shared buffer that a log thread writes out every few milliseconds.
//!
//! A request thread appends its formatted line to the buffer under a short lock and goes on; it
//! neither writes to the output nor wakes a thread. The log thread wakes on a timer, takes what
//! has gathered and writes it in one call. Handing each line over a channel instead (as
//! `tracing-appender` does) woke the log thread for nearly every line under load, a futex call
//! and a write call per request. Nothing is dropped: when the buffer is full, the thread that
//! logs writes the buffer and its line out itself, in order. This module does not format lines
//! and does not choose what is logged.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// How long a line may wait in the buffer before the log thread writes it out.
pub const LOG_FLUSH_INTERVAL_MS: u64 = 10;
/// The most bytes the buffer holds; a line that would go past it is written out at once, with
/// everything before it, by the thread that logs it.
pub const MAX_BUFFERED_LOG_BYTES: usize = 1024 * 1024;

/// The buffer and the output behind it. Lock order: `pending`, then `output`.
struct Shared<W> {
    pending: Mutex<Vec<u8>>,
    output: Mutex<W>,
    stopping: AtomicBool,
}

impl<W: Write> Shared<W> {
    /// Writes out whatever is pending. The output's lock is taken before the buffer's is
    /// released, so that lines reach the output in the order they were logged.
    fn flush_pending(&self, spare: &mut Vec<u8>) {
        let mut pending = self.pending.lock();
        let mut output = self.output.lock();
        std::mem::swap(&mut *pending, spare);
        drop(pending);
        // A log that cannot be written has nowhere to report it; the lines are dropped.
        let _ = output.write_all(spare);
        let _ = output.flush();
        spare.clear();
    }
}

/// The writer handed to the log formatter; cheap to clone, one per line.
pub struct BufferedLog<W: Write + Send + 'static> {
    shared: Arc<Shared<W>>,
}

impl<W: Write + Send + 'static> Clone for BufferedLog<W> {
    fn clone(&self) -> Self {
        BufferedLog {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Stops the log thread when dropped, after it has written out every line logged before.
pub struct FlushOnDrop<W: Write + Send + 'static> {
    shared: Arc<Shared<W>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts the log thread writing to `output`; returns the writer for the formatter and the
/// guard that writes out the rest when dropped.
pub fn buffered_log<W: Write + Send + 'static>(output: W) -> (BufferedLog<W>, FlushOnDrop<W>) {
    let shared = Arc::new(Shared {
        pending: Mutex::new(Vec::with_capacity(MAX_BUFFERED_LOG_BYTES)),
        output: Mutex::new(output),
        stopping: AtomicBool::new(false),
    });
    let for_thread = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("log-writer".to_string())
        .spawn(move || {
            let mut spare = Vec::with_capacity(MAX_BUFFERED_LOG_BYTES);
            while !for_thread.stopping.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(LOG_FLUSH_INTERVAL_MS));
                for_thread.flush_pending(&mut spare);
            }
            for_thread.flush_pending(&mut spare);
        })
        .expect("the log thread starts");
    (
        BufferedLog {
            shared: Arc::clone(&shared),
        },
        FlushOnDrop {
            shared,
            thread: Some(thread),
        },
    )
}

impl<W: Write + Send + 'static> Write for BufferedLog<W> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut pending = self.shared.pending.lock();
        if pending.len() + line.len() <= MAX_BUFFERED_LOG_BYTES {
            pending.extend_from_slice(line);
            return Ok(line.len());
        }
        // Full: write it all out here, in order, rather than drop a line or grow without bound.
        let mut output = self.shared.output.lock();
        output.write_all(&pending)?;
        pending.clear();
        output.write_all(line)?;
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'writer, W: Write + Send + 'static> tracing_subscriber::fmt::MakeWriter<'writer> for BufferedLog<W> {
    type Writer = BufferedLog<W>;

    fn make_writer(&'writer self) -> Self::Writer {
        self.clone()
    }
}

impl<W: Write + Send + 'static> Drop for FlushOnDrop<W> {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read back.
    #[derive(Clone, Default)]
    struct Collected(Arc<Mutex<Vec<u8>>>);

    impl Write for Collected {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_reach_the_output_in_order_after_the_interval_and_at_the_end() {
        let collected = Collected::default();
        let (mut log, guard) = buffered_log(collected.clone());
        log.write_all(b"first\n").unwrap();
        assert!(collected.0.lock().is_empty(), "a line waits for the log thread");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while collected.0.lock().is_empty() {
            assert!(std::time::Instant::now() < deadline, "the log thread never wrote");
            std::thread::sleep(Duration::from_millis(1));
        }
        log.write_all(b"second\n").unwrap();
        drop(guard);
        assert_eq!(collected.0.lock().as_slice(), b"first\nsecond\n");
    }

    #[test]
    fn a_full_buffer_is_written_out_by_the_logging_thread_without_losing_or_reordering_lines() {
        let collected = Collected::default();
        let (log, guard) = buffered_log(collected.clone());
        let line_bytes = 1_000;
        let lines_per_thread = 3 * MAX_BUFFERED_LOG_BYTES / line_bytes;
        let threads: Vec<_> = (0..4u8)
            .map(|thread| {
                let mut log = log.clone();
                std::thread::spawn(move || {
                    for number in 0..lines_per_thread {
                        let mut line = format!("{thread} {number:08} ").into_bytes();
                        line.resize(line_bytes - 1, b'.');
                        line.push(b'\n');
                        log.write_all(&line).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(collected.0.lock().clone()).unwrap();
        let mut next_expected = [0usize; 4];
        for line in text.lines() {
            let mut words = line.split(' ');
            let thread: usize = words.next().unwrap().parse().unwrap();
            let number: usize = words.next().unwrap().parse().unwrap();
            assert_eq!(
                number, next_expected[thread],
                "a line of thread {thread} is missing or out of order"
            );
            next_expected[thread] += 1;
        }
        assert_eq!(next_expected, [lines_per_thread; 4]);
    }
}
