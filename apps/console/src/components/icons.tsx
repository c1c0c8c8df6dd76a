/** Small line icons (16px, currentColor), drawn here rather than taken from a font. */
import type { ComponentChildren } from 'preact';

function Icon({ children }: { children: ComponentChildren }) {
  return (
    <svg
      width="16"
      height="16"
      viewBox="0 0 16 16"
      fill="none"
      stroke="currentColor"
      stroke-width="1.5"
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden="true"
    >
      {children}
    </svg>
  );
}

export const icons = {
  overview: (
    <Icon>
      <rect x="2" y="2" width="5" height="5" rx="1" />
      <rect x="9" y="2" width="5" height="5" rx="1" />
      <rect x="2" y="9" width="5" height="5" rx="1" />
      <rect x="9" y="9" width="5" height="5" rx="1" />
    </Icon>
  ),
  buckets: (
    <Icon>
      <path d="M2.5 5.5 8 2.5l5.5 3L8 8.5z" />
      <path d="M2.5 8.5 8 11.5l5.5-3" />
      <path d="M2.5 11 8 14l5.5-3" />
    </Icon>
  ),
  access: (
    <Icon>
      <circle cx="5.5" cy="8" r="3" />
      <path d="M8.5 8H14M12 8v2.5M14 8v2" />
    </Icon>
  ),
  accounts: (
    <Icon>
      <circle cx="8" cy="5.5" r="2.8" />
      <path d="M2.8 14c.6-2.8 2.7-4.3 5.2-4.3s4.6 1.5 5.2 4.3" />
    </Icon>
  ),
  collections: (
    <Icon>
      <rect x="2" y="3" width="12" height="10" rx="1.5" />
      <path d="M2 6.5h12M6 6.5V13" />
    </Icon>
  ),
  groups: (
    <Icon>
      <circle cx="5.5" cy="6" r="2.2" />
      <circle cx="11" cy="6.5" r="1.8" />
      <path d="M1.8 13c.4-2.2 1.9-3.4 3.7-3.4s3.3 1.2 3.7 3.4M9.8 9.8c1.9-.3 3.6.6 4.1 2.7" />
    </Icon>
  ),
  history: (
    <Icon>
      <path d="M2.5 8a5.5 5.5 0 1 0 1.6-3.9" />
      <path d="M2.3 2.5v2.8h2.8M8 5v3.2l2 1.3" />
    </Icon>
  ),
  permissions: (
    <Icon>
      <rect x="3" y="7" width="10" height="7" rx="1.5" />
      <path d="M5.5 7V5a2.5 2.5 0 0 1 5 0v2" />
    </Icon>
  ),
  attributes: (
    <Icon>
      <path d="M5.5 2.5c-1.5 0-2 .6-2 2v1.5c0 1-.5 1.6-1.5 2 1 .4 1.5 1 1.5 2v1.5c0 1.4.5 2 2 2" />
      <path d="M10.5 2.5c1.5 0 2 .6 2 2v1.5c0 1 .5 1.6 1.5 2-1 .4-1.5 1-1.5 2v1.5c0 1.4-.5 2-2 2" />
    </Icon>
  ),
};
