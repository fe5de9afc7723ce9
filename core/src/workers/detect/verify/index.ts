export { fusedPersonScore, PersonVerifier, refineBox } from './person-verifier.ts';
export { sampleWindow, type VerifierWindowSpec, verifierWindow } from './window.ts';
