/* interpose_stdio.h - what the stdio interposer (interpose_stdio.c) offers
 * the rest of the library: the last flush of the app's streams, recorded
 * from the library destructor. It must never wait for a stream another
 * thread holds locked (exit would hang): such a stream is skipped. */
#ifndef PREPLAY_TRACER_INTERPOSE_STDIO_H
#define PREPLAY_TRACER_INTERPOSE_STDIO_H

/* Flushes, and records, what the app's stdio streams still buffer, for the
 * library destructor: exit() flushes them only after destructors ran, where
 * the tracer no longer sees them. */
void tracer_stdio_exit_flush(void);

#endif
