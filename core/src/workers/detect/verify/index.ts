export { fusedScore, refineBox, Verifier, type VerifierTarget } from './verifier.ts';
export { sampleWindow, type VerifierWindowSpec, verifierWindow } from './window.ts';
