import { NotImplemented } from '../lib/errors';
import type { HandlerMap, OperationId } from './types';

/**
 * Operations declared in the contract whose behaviour a later change builds: they answer 501
 * `not_implemented` so the registry is complete and the contract whole from the start.
 */
export function notImplemented<K extends OperationId>(...operationIds: K[]): HandlerMap<K> {
  const map = {} as Record<K, unknown>;
  for (const id of operationIds) {
    map[id] = async () => {
      throw new NotImplemented(id);
    };
  }
  return map as HandlerMap<K>;
}
