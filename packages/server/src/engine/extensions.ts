/**
 * Hooks a feature adds to a resource it does not own (attachments on records, collections and
 * buckets), without the resource or the engine knowing the feature: `extendResource` gives the
 * definition the feature's hooks after its own (its `processData` first, so a feature checks
 * what the client sent before the resource normalises it).
 */
import type { ResourceDefinition } from './definition.js';

type Hooks = Pick<ResourceDefinition, 'processData' | 'afterWrite' | 'beforeRemainsDeleted' | 'afterDelete'>;

export interface ResourceExtension extends Hooks {
  /** The resource it extends (`record`, `collection`, `bucket`…). */
  resource: string;
}

export function extendResource(def: ResourceDefinition, extensions: readonly ResourceExtension[]): ResourceDefinition {
  const mine = extensions.filter((extension) => extension.resource === def.name);
  if (mine.length === 0) return def;
  const processors = [
    ...mine.flatMap((extension) => (extension.processData ? [extension.processData] : [])),
    ...(def.processData ? [def.processData] : []),
  ];
  const afterWrites = [
    ...(def.afterWrite ? [def.afterWrite] : []),
    ...mine.flatMap((extension) => (extension.afterWrite ? [extension.afterWrite] : [])),
  ];
  const beforeRemains = [
    ...(def.beforeRemainsDeleted ? [def.beforeRemainsDeleted] : []),
    ...mine.flatMap((extension) => (extension.beforeRemainsDeleted ? [extension.beforeRemainsDeleted] : [])),
  ];
  const afterDeletes = [
    ...(def.afterDelete ? [def.afterDelete] : []),
    ...mine.flatMap((extension) => (extension.afterDelete ? [extension.afterDelete] : [])),
  ];
  return {
    ...def,
    ...(processors.length > 0 && {
      async processData(data, context) {
        let result = data;
        for (const process of processors) result = await process(result, context);
        return result;
      },
    }),
    ...(afterWrites.length > 0 && {
      async afterWrite(context, stored) {
        for (const hook of afterWrites) await hook(context, stored);
      },
    }),
    ...(beforeRemains.length > 0 && {
      async beforeRemainsDeleted(context) {
        for (const hook of beforeRemains) await hook(context);
      },
    }),
    ...(afterDeletes.length > 0 && {
      async afterDelete(context, tombstone) {
        for (const hook of afterDeletes) await hook(context, tombstone);
      },
    }),
  };
}
