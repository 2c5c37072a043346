// Stuck detection and repair: built on the engine's claims, used by the tRPC layer.
export * from './stuck';
export * from './actions';
export * from './bulk';
