import type { StreamType } from '../tables';
import { datadogSink } from './datadog';
import { httpsSink } from './https';
import { splunkHecSink } from './splunk-hec';
import type { Sink } from './types';

export type { Sink, SinkBatch, SinkOutcome } from './types';

/** The sink of each stream type (S3 comes with its own slice). */
export const SINKS: Partial<Record<StreamType, Sink>> = {
  https: httpsSink,
  splunk_hec: splunkHecSink,
  datadog: datadogSink,
};
