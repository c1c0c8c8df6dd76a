/**
 * A list that renders only the rows in view (plus a few around them), so 100,000 rows cost what
 * 30 do. Rows have one fixed height; the scroll area has the list's full height, scaled down
 * past what browsers can lay out (about 30 million pixels), so the scrollbar stays truthful.
 */
import type { ComponentChildren, RefObject } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

/** Browsers stop laying out elements somewhere above 30M px: stay well below. */
const MAX_HEIGHT = 10_000_000;

interface VirtualListProps {
  count: number;
  rowHeight: number;
  renderRow: (index: number) => ComponentChildren;
  /** Shown above the rows, sticky (a table's column headers). */
  header?: ComponentChildren;
  /** Called with the range of rows in view (end exclusive), e.g. to load them. */
  onRange?: (start: number, end: number) => void;
  overscan?: number;
  label: string;
  /** Total rows for assistive technology (`aria-rowcount`). */
  ariaRowCount?: number;
  class?: string;
  /** Smallest width of the rows (wide tables scroll sideways). */
  minWidth?: number;
  /** Changes of this value scroll back to the top (a new query). */
  resetKey?: string;
  empty?: ComponentChildren;
}

/** The scroll area's height and its header's, kept up to date as it is resized. */
function useMeasures(scroller: RefObject<HTMLDivElement | null>, header: RefObject<HTMLDivElement | null>) {
  const [viewport, setViewport] = useState(600);
  const [headerHeight, setHeaderHeight] = useState(0);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const measure = () => {
      setViewport(element.clientHeight);
      setHeaderHeight(header.current?.offsetHeight ?? 0);
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return { viewport, headerHeight };
}

export function VirtualList(props: VirtualListProps) {
  const { count, rowHeight, overscan = 8 } = props;
  const scroller = useRef<HTMLDivElement>(null);
  const headerRef = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const { viewport, headerHeight } = useMeasures(scroller, headerRef);
  const frame = useRef(0);

  useEffect(() => {
    if (scroller.current) scroller.current.scrollTop = 0;
    setScrollTop(0);
  }, [props.resetKey]);

  const onScroll = () => {
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      if (scroller.current) setScrollTop(scroller.current.scrollTop);
    });
  };
  useEffect(() => () => cancelAnimationFrame(frame.current), []);

  const rowsViewport = Math.max(0, viewport - headerHeight);
  const fullHeight = count * rowHeight;
  const height = Math.min(fullHeight, MAX_HEIGHT);
  // Past MAX_HEIGHT, one pixel of scrolling moves `scale` pixels through the list.
  const scale =
    fullHeight > height && height > rowsViewport ? (fullHeight - rowsViewport) / (height - rowsViewport) : 1;
  const virtualTop = scrollTop * scale;
  const start = Math.max(0, Math.floor(virtualTop / rowHeight) - overscan);
  const end = Math.min(count, Math.ceil((virtualTop + rowsViewport) / rowHeight) + overscan);

  const onRange = props.onRange;
  useEffect(() => {
    onRange?.(start, end);
  }, [start, end, onRange]);

  const rows: ComponentChildren[] = [];
  for (let index = start; index < end; index++) {
    const top = scrollTop + (index * rowHeight - virtualTop);
    rows.push(
      <div key={index} class="vrow-slot" style={{ top: `${top}px`, height: `${rowHeight}px` }}>
        {props.renderRow(index)}
      </div>,
    );
  }

  return (
    <div
      class={`vlist ${props.class ?? ''}`}
      ref={scroller}
      onScroll={onScroll}
      role="table"
      aria-label={props.label}
      aria-rowcount={props.ariaRowCount ?? count}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: it scrolls: keyboard users must focus it to scroll it
      tabIndex={0}
    >
      <div class="vlist-inner" style={props.minWidth ? { minWidth: `${props.minWidth}px` } : undefined}>
        {props.header ? (
          <div class="vlist-header" ref={headerRef}>
            {props.header}
          </div>
        ) : null}
        {count === 0 && props.empty ? (
          <div class="vlist-empty">{props.empty}</div>
        ) : (
          <div class="vlist-body" style={{ height: `${height}px` }}>
            {rows}
          </div>
        )}
      </div>
    </div>
  );
}
