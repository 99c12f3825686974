import type { StreamType } from '../tables';
import { datadogSink } from './datadog';
import { httpsSink } from './https';
import { s3Sink } from './s3';
import { splunkHecSink } from './splunk-hec';
import type { Sink } from './types';

export type { Sink, SinkBatch, SinkOutcome } from './types';

/** The sink of each stream type. */
export const SINKS: Record<StreamType, Sink> = {
  https: httpsSink,
  splunk_hec: splunkHecSink,
  datadog: datadogSink,
  s3: s3Sink,
};
