/** Every bucket the signed-in user may read, and creating one. */
import { useState } from 'preact/hooks';
import { href, navigate } from '../lib/router.js';
import { useCapabilities, useConsole } from './context.js';
import { CreateDialog } from './CreateDialog.js';
import { ObjectList } from './ObjectList.js';
import { PageHeader } from './ui.js';

export function BucketsPage() {
  const { hello } = useConsole();
  const { readonly } = useCapabilities();
  const [creating, setCreating] = useState(false);
  return (
    <div class="page fill">
      <PageHeader
        title="Buckets"
        actions={
          readonly || !hello.user ? null : (
            <button type="button" class="button" onClick={() => setCreating(true)}>
              New bucket
            </button>
          )
        }
      >
        Buckets hold collections of records and groups of users. You see those you may read.
      </PageHeader>
      <ObjectList
        path="/buckets"
        noun="bucket"
        linkOf={(bucket) => href.bucket(bucket.id)}
        emptyText={
          hello.user?.bucket ? (
            <>No bucket yet. Your personal bucket appears once it is used.</>
          ) : (
            'No bucket you may read.'
          )
        }
      />
      {creating ? (
        <CreateDialog
          noun="bucket"
          parentPath=""
          plural="buckets"
          idRequired
          onClose={() => setCreating(false)}
          onCreated={(bucket) => navigate(href.bucket(bucket.id))}
        />
      ) : null}
    </div>
  );
}
