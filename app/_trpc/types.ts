import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@/server/trpc/root';

// What each procedure takes and answers, inferred from the router: the console's
// components name their data by these, so a change in a router's shape is a type error in
// the component that shows it.

export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;
