// The plan as a graph (lib/planGraph lays it out), drawn by React Flow
// (@xyflow/react). Loaded only when a person asks for the graph: it is not
// part of the first page's JavaScript.
import '@xyflow/react/dist/style.css';
import { Box, Paper, Text, useComputedColorScheme } from '@mantine/core';
import { useElementSize } from '@mantine/hooks';
import {
  Background,
  Controls,
  type Edge,
  Handle,
  MarkerType,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
} from '@xyflow/react';
import { useMemo } from 'react';
import { words } from '../../lib/format';
import { type PlannedTask, numberRanges } from '../../lib/plan';
import { boxHeight, boxWidth, planGraph } from '../../lib/planGraph';

type BoxData = { label: string; detail: string; stage: number };
type BoxNode = Node<BoxData, 'box'>;

function BoxView({ data }: NodeProps<BoxNode>) {
  return (
    <Paper withBorder radius="sm" px="xs" py={4} w={boxWidth} h={boxHeight} data-plan-box={data.label}>
      <Handle type="target" position={Position.Top} isConnectable={false} />
      <Text size="sm" fw={600} truncate="end">
        {data.label}
      </Text>
      <Text size="xs" c="dimmed" truncate="end">
        {data.detail}
      </Text>
      <Handle type="source" position={Position.Bottom} isConnectable={false} />
    </Paper>
  );
}

const nodeTypes = { box: BoxView };
const pad = 24;

export default function PlanGraph({
  tasks,
  edges,
}: {
  tasks: readonly PlannedTask[];
  edges: readonly (readonly string[])[];
}) {
  const scheme = useComputedColorScheme('light');
  const { ref, width } = useElementSize();
  const { nodes, arrows, stages, right, bottom } = useMemo(() => {
    const g = planGraph(tasks, edges);
    const nodes: BoxNode[] = g.boxes.map((b) => ({
      id: b.id,
      type: 'box',
      position: { x: b.x, y: b.y },
      data: {
        label: `${words(b.action)}${b.service ? ` ${b.service}` : ''}${b.count > 1 ? ` × ${b.count}` : ''}`,
        detail: `stage ${b.stage + 1}, ${
          b.nodenums.length === 0
            ? 'the whole cluster'
            : `${b.nodenums.length === 1 ? 'node' : 'nodes'} ${numberRanges(b.nodenums)}`
        }`,
        stage: b.stage,
      },
      draggable: false,
      selectable: false,
      connectable: false,
      focusable: true,
    }));
    const arrows: Edge[] = g.arrows.map((a) => ({
      id: a.id,
      source: a.from,
      target: a.to,
      type: 'smoothstep',
      focusable: false,
      selectable: false,
      markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 },
    }));
    const right = Math.max(0, ...g.boxes.map((b) => b.x)) + boxWidth;
    const bottom = Math.max(0, ...g.boxes.map((b) => b.y)) + boxHeight;
    return { nodes, arrows, stages: new Set(g.boxes.map((b) => b.stage)).size, right, bottom };
  }, [tasks, edges]);
  const height = Math.ceil(pad * 2 + bottom * Math.min(1, width > 0 ? (width - pad * 2) / right : 1));
  return (
    // The graph at full size when it fits the width, scaled down to fit it
    // otherwise; as tall as it then is, so the page scrolls, not the graph.
    <Box
      ref={ref}
      h={height}
      data-testid="plan-graph"
      role="figure"
      aria-label={`The plan as a graph: ${nodes.length} steps in ${stages} stages, top to bottom; an arrow means the step it points to waits for the one it leaves`}
    >
      <ReactFlow
        // Fitted again when the height changes (the width is known).
        key={height}
        nodes={nodes}
        edges={arrows}
        nodeTypes={nodeTypes}
        colorMode={scheme}
        fitView
        fitViewOptions={{ padding: `${pad}px`, maxZoom: 1 }}
        minZoom={0.2}
        maxZoom={1.5}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        panOnScroll={false}
        zoomOnScroll={false}
        preventScrolling={false}
      >
        <Background gap={24} />
        <Controls showInteractive={false} />
      </ReactFlow>
    </Box>
  );
}
