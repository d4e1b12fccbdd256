//! Tiny binary payloads, base64-encoded, for the image, audio and blob fixtures.

/// A 1x1 red pixel, as a PNG.
pub const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/// One millisecond of silence: a WAV file, 8 kHz, mono, 8-bit PCM, eight samples.
pub const SILENCE_WAV: &str =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
