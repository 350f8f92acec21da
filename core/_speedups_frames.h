/* The framed records of a read block: four int64s per record in one bytes object (key start, key
 * length or -1 for a null key, value start, value length). frame_text (the CLI text extension)
 * writes them; the client extension's encode_frame_run, frame_partitions and frame_groups read them. */
#ifndef PYLOG_SPEEDUPS_FRAMES_H
#define PYLOG_SPEEDUPS_FRAMES_H

#define LINES_SLOT 4             /* int64s per framed record */

#endif
